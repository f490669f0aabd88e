package taskservicetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
)

// childEnv asks a test binary to run as an etcd server: "<dir>|<url>".
const childEnv = "TASKSERVICETEST_ETCD_CHILD"

// RunEtcdChildIfAsked turns the test binary into an etcd server process when
// StartEtcdProcess started it; call it first in TestMain. It never returns
// in the child.
func RunEtcdChildIfAsked() {
	v := os.Getenv(childEnv)
	if v == "" {
		return
	}
	dir, url, _ := strings.Cut(v, "|")
	srv, err := etcdembed.Start(context.Background(), etcdembed.Config{Dir: dir, ClientURL: url, Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd child:", err)
		os.Exit(3)
	}
	// The parent reads the URL it bound (the real port when it asked for 0).
	fmt.Fprintln(os.Stdout, readyPrefix+srv.ClientURL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	srv.Close()
	os.Exit(0)
}

// readyPrefix starts the line by which an etcd child reports its URL.
const readyPrefix = "etcd child ready: "

// EtcdProcess is an etcd server in a child process, so that a test can
// stop it at once with SIGKILL, as an external etcd that goes away.
type EtcdProcess struct {
	URL  string
	Dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
}

// StartEtcdProcess starts etcd in a child process on dir and url and waits
// until it answers. Pass a URL with port 0 ("http://127.0.0.1:0") for a
// first start: the child binds a free port itself and reports it (read it
// from URL), so no other process can take the port between its choice and
// its use. A restart on the same dir passes the URL it had. The package's
// TestMain must call RunEtcdChildIfAsked.
func StartEtcdProcess(t testing.TB, dir, url string) *EtcdProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir+"|"+url)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("etcd process stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd process: %v", err)
	}
	p := &EtcdProcess{Dir: dir, cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		// Owned by the process: it ends when the process does (Kill).
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				ready <- u
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Kill)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case p.URL = <-ready:
	case <-p.done:
		t.Fatalf("the etcd process on %s exited before it was ready (its error is on stderr)", url)
	case <-timer.C:
		t.Fatalf("the etcd process on %s not ready after 30s", url)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.URL}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err == nil
	}, "the etcd process on %s to answer", p.URL)
	return p
}

// Signal sends sig to the process: SIGSTOP freezes etcd with requests in
// flight, SIGCONT lets it go on.
func (p *EtcdProcess) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill stops the process with SIGKILL and waits for it.
func (p *EtcdProcess) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Client returns a new node client of the etcd process (taskservice.DialEtcd),
// closed at cleanup.
func (p *EtcdProcess) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := taskservice.DialEtcd([]string{p.URL})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
