//go:build !linux

package integration

import "os/exec"

// setSysProcAttr has nothing to add outside Linux.
func setSysProcAttr(*exec.Cmd) {}
