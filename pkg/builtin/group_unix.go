//go:build unix

package builtin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// watcherScript is run by a run's watcher: it blocks on fd 3, the read end
// of the lifeline pipe, which nothing ever writes to. Read returns at end of
// file, that is once every write end is closed: when the run ends, or when
// the node dies and the kernel closes its files. Then it kills its whole
// process group, itself included.
const watcherScript = `read -r _ <&3; kill -9 0`

// runGroup is the process group of one run. Its leader is a watcher shell
// started before the command; the command joins the group, and everything
// the command starts stays in it unless it moves itself out (setsid,
// setpgid).
//
// The node holds the only write end of a pipe whose read end the watcher
// waits on. If the node dies, however it dies, the kernel closes that write
// end, the watcher reads end of file and kills the group. No signal has to
// be delivered by a dying process and no thread has to stay alive, so the
// guarantee holds under SIGKILL and on every Unix. The watcher is started
// first, so there is no moment when the command runs unwatched: if the node
// dies before the command joins, the group is gone and the command cannot
// join it, or it joins and is killed with the group.
type runGroup struct {
	watcher  *exec.Cmd
	lifeline *os.File // write end of the lifeline pipe; never written
	pgid     int      // the watcher's pid
}

// startGroup starts the watcher of a new process group.
func startGroup() (*runGroup, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child keeps a copy
	if err != nil {
		return nil, fmt.Errorf("lifeline pipe: %w", err)
	}
	watcher := exec.Command("/bin/sh", "-c", watcherScript)
	watcher.ExtraFiles = []*os.File{r} // fd 3
	watcher.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = watcher.Start()
	_ = r.Close() // the watcher holds its own copy
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start the process group's watcher /bin/sh: %w", err)
	}
	return &runGroup{watcher: watcher, lifeline: w, pgid: watcher.Process.Pid}, nil
}

// join makes cmd start as a member of the group.
func (g *runGroup) join(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.pgid}
}

// kill sends SIGKILL to every process of the group. It returns
// os.ErrProcessDone if the group has no process left. The watcher is not
// reaped before close, so its pid, the group's id, cannot be reused until
// then.
func (g *runGroup) kill() error {
	err := syscall.Kill(-g.pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// close kills what is left of the group, reaps the watcher and closes the
// lifeline.
func (g *runGroup) close() error {
	err := g.kill()
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	_ = g.watcher.Wait() // killed by SIGKILL: an error by design
	_ = g.lifeline.Close()
	return err
}
