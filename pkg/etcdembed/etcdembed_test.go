package etcdembed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/taskd/taskd/pkg/etcdembed"
)

// Members of one cluster in one process keep each other's peer HTTP
// connections: etcd's Close shuts its listeners but not the connections a
// member in the same process still holds. Only the cluster test has them; in
// taskd every member is its own process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/soheilhy/cmux.(*MuxConn).Read"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).abortPendingRead"),
	)
}

// A second server on a data dir in use fails at once with a clear error,
// where etcd itself would block forever on bbolt's lock; the dir is usable
// again once the first server closes.
func TestDataDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if !errors.Is(err, etcdembed.ErrDirInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second start: %v, want ErrDirInUse naming %s", err, dir)
	}
	if !strings.HasPrefix(first.ClientURL(), "http://127.0.0.1:") || strings.HasSuffix(first.ClientURL(), ":0") {
		t.Errorf("client URL %q: want the real port", first.ClientURL())
	}
	first.Close()
	first.Close() // idempotent
	again, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatalf("restart on the freed dir: %v", err)
	}
	again.Close()
}

// freePort returns a loopback host:port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Three members started together form one cluster: a write through one is
// read through another, and a member closed and restarted on its data
// directory with ClusterState "existing" rejoins and sees later writes.
func TestThreeMemberCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfgs, servers := startCluster(ctx, t)
	for _, s := range servers {
		defer s.Close()
	}
	put(ctx, t, servers[0].ClientURL(), "a", "1")
	if got := get(ctx, t, servers[2].ClientURL(), "a"); got != "1" {
		t.Fatalf("read through another member: %q, want 1", got)
	}
	servers[1].Close()
	put(ctx, t, servers[2].ClientURL(), "b", "2") // two of three: a quorum
	cfgs[1].ClusterState = "existing"
	again, err := etcdembed.Start(ctx, cfgs[1])
	if err != nil {
		t.Fatalf("restart member 1: %v", err)
	}
	defer again.Close()
	if got := get(ctx, t, again.ClientURL(), "b"); got != "2" {
		t.Fatalf("restarted member reads %q, want 2", got)
	}
}

// startCluster starts three members together. Their peer URLs must be
// known before any starts, so ports are picked free and bound later: if
// another test took one in between, the whole cluster starts again on
// fresh ports and directories (up to three times).
func startCluster(ctx context.Context, t *testing.T) ([]etcdembed.Config, []*etcdembed.Server) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		base := t.TempDir()
		cfgs := make([]etcdembed.Config, 3)
		var initial []string
		for i := range cfgs {
			name := fmt.Sprintf("m%d", i)
			cfgs[i] = etcdembed.Config{
				Dir:                 filepath.Join(base, name),
				ClientURL:           "http://" + freePort(t),
				PeerURL:             "http://" + freePort(t),
				Name:                name,
				InitialClusterToken: "etcdembed-test",
				ClusterState:        "new",
				Fast:                true,
			}
			initial = append(initial, name+"="+cfgs[i].PeerURL)
		}
		servers := make([]*etcdembed.Server, 3)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range cfgs {
			cfgs[i].InitialCluster = strings.Join(initial, ",")
			wg.Add(1)
			go func() { // a new member is ready only once a quorum has started
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				servers[i], errs[i] = etcdembed.Start(sctx, cfgs[i])
			}()
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			return cfgs, servers
		}
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
		if attempt == 2 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("start three members: %v", err)
		}
	}
}

func client(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

func put(ctx context.Context, t *testing.T, url, k, v string) {
	t.Helper()
	cli := client(t, url)
	defer cli.Close()
	if _, err := cli.Put(ctx, k, v); err != nil {
		t.Fatalf("put %s through %s: %v", k, url, err)
	}
}

// get reads k with a linearizable read, so the member must be in the
// cluster's quorum to answer.
func get(ctx context.Context, t *testing.T, url, k string) string {
	t.Helper()
	cli := client(t, url)
	defer cli.Close()
	resp, err := cli.Get(ctx, k)
	if err != nil {
		t.Fatalf("get %s through %s: %v", k, url, err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
