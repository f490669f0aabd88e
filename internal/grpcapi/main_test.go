package grpcapi_test

import (
	"testing"

	"go.uber.org/goleak"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

func TestMain(m *testing.M) {
	tst.RunEtcdChildIfAsked()
	goleak.VerifyTestMain(m,
		// etcd's client keeps a resolver goroutine per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}
