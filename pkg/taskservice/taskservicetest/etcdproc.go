package taskservicetest

import (
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
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	srv.Close()
	os.Exit(0)
}

// EtcdProcess is an etcd server in a child process, so that a test can
// stop it at once with SIGKILL, as an external etcd that goes away.
type EtcdProcess struct {
	URL string
	Dir string
	cmd *exec.Cmd
}

// StartEtcdProcess starts etcd in a child process on dir and url (which
// must name a port) and waits until it answers. The package's TestMain must
// call RunEtcdChildIfAsked.
func StartEtcdProcess(t testing.TB, dir, url string) *EtcdProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir+"|"+url)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd process: %v", err)
	}
	p := &EtcdProcess{URL: url, Dir: dir, cmd: cmd}
	t.Cleanup(p.Kill)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err == nil
	}, "the etcd process on %s to answer", url)
	return p
}

// Kill stops the process with SIGKILL and waits for it.
func (p *EtcdProcess) Kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}
