package integration

import (
	"os/exec"
	"syscall"
)

// setSysProcAttr makes the kernel kill the child if the test binary dies
// (a test timeout panics past the cleanups), so no taskd outlives the tests.
func setSysProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
