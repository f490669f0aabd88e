//go:build compose

package compose

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The gRPC clients are closed by each test; their transports end
	// asynchronously.
	goleak.VerifyTestMain(m)
}
