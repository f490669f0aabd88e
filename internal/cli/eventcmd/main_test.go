package eventcmd

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind (a stream
// or a timer of a watch that was not stopped, for instance).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
