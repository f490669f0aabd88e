package writepath

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

const tid = "01h00000000000000000000000"

func TestTaskAt(t *testing.T) {
	s, k := NewShapes("/taskd/", "n1"), keyspace.New("/taskd/")
	for _, rev := range []int64{0, 1, 12345} {
		cmp := s.TaskAt("bob/x", tid, rev)
		c := cmp.GetCompare()
		if string(c.GetKey()) != k.Task("bob/x", tid) || c.GetTarget() != pb.Compare_MOD ||
			c.GetResult() != pb.Compare_EQUAL || c.GetModRevision() != rev {
			t.Errorf("TaskAt(rev %d) = %v", rev, c)
		}
	}
}

func TestPutHandoff(t *testing.T) {
	k := keyspace.New("/taskd/")
	op, err := PutHandoff(k, "n1", "n2", "alice", "01abc")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(op.KeyBytes()); got != k.Entry("n1", "alice", "01abc") {
		t.Errorf("entry written at %q", got)
	}
	var e storev1.HandoffEntry
	if err := proto.Unmarshal(op.ValueBytes(), &e); err != nil || e.Identity != "alice" || e.From != "n2" || e.TaskId != "01abc" {
		t.Errorf("entry %v (%v)", &e, err)
	}
}
