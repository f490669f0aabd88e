package handoff_test

import (
	"testing"

	"go.uber.org/goleak"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

func TestMain(m *testing.M) {
	tst.RunEtcdChildIfAsked()
	goleak.VerifyTestMain(m)
}
