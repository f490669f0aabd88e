//go:build !unix

package builtin

import (
	"os"
	"os/exec"
)

// runGroup has no process group to manage outside Unix: only the command
// itself is killed when the run ends early, and nothing ties it to the
// node's life.
type runGroup struct {
	cmd *exec.Cmd
}

func startGroup() (*runGroup, error) { return &runGroup{}, nil }

func (g *runGroup) join(cmd *exec.Cmd) { g.cmd = cmd }

func (g *runGroup) kill() error {
	if g.cmd == nil || g.cmd.Process == nil {
		return os.ErrProcessDone
	}
	return g.cmd.Process.Kill()
}

func (g *runGroup) close() error { return nil }
