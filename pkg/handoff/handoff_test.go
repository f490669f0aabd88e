package handoff_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/handoff"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

func TestMain(m *testing.M) {
	tst.RunEtcdChildIfAsked()
	goleak.VerifyTestMain(m)
}

func TestEntryLayout(t *testing.T) {
	k := handoff.NewKeys("/taskd/")
	if got := k.Entry("n1", "bob/x", "*"); got != "/taskd/handoff/n1/bob%2Fx/*" {
		t.Errorf("entry key %q", got)
	}
	if !strings.HasPrefix(k.Entry("n1", "a", "t"), k.Area("n1")) || strings.HasPrefix(k.Entry("n10", "a", "t"), k.Area("n1")) {
		t.Error("a node's area must hold its entries and only its entries")
	}
	op, err := k.PutOp("n1", "n2", "alice", "01abc")
	if err != nil {
		t.Fatal(err)
	}
	var e storev1.HandoffEntry
	if err := proto.Unmarshal(op.ValueBytes(), &e); err != nil || e.Identity != "alice" || e.From != "n2" || e.TaskId != "01abc" {
		t.Errorf("entry %v (%v)", &e, err)
	}
}
