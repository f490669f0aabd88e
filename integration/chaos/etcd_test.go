//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/taskd/taskd/pkg/etcdembed"
)

// etcdMember is one member of the cluster, run as a child process (the test
// binary re-executed with memberEnv) so it can be killed and paused.
type etcdMember struct {
	cfg     etcdembed.Config
	logPath string
	mu      sync.Mutex
	proc    *proc
}

// etcdCluster is a three-member etcd cluster of child processes on
// loopback. Every member keeps its ports and data dir across restarts.
type etcdCluster struct {
	members []*etcdMember
}

// startCluster starts three members concurrently (a new member is ready
// only once a quorum has started) and waits until each answers.
func startCluster(ctx context.Context, dir string) (*etcdCluster, error) {
	c := &etcdCluster{}
	var initial []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("etcd%d", i)
		caddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		paddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		m := &etcdMember{
			cfg: etcdembed.Config{
				Dir:                 filepath.Join(dir, name),
				ClientURL:           "http://" + caddr,
				PeerURL:             "http://" + paddr,
				Name:                name,
				InitialClusterToken: "taskd-chaos",
				ClusterState:        "new",
				Fast:                true,
			},
			logPath: filepath.Join(dir, name+".log"),
		}
		initial = append(initial, name+"="+m.cfg.PeerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
		if err := m.launch(); err != nil {
			c.close()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := m.waitServing(ctx); err != nil {
			c.close()
			return nil, err
		}
		// From now on a member that restarts rejoins the running cluster.
		m.cfg.ClusterState = "existing"
	}
	return c, nil
}

// endpoints lists the members' client addresses, as taskd's --etcd takes.
func (c *etcdCluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.cfg.ClientURL)
	}
	return eps
}

func (m *etcdMember) launch() error {
	b, err := json.Marshal(m.cfg)
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(childEnv(), memberEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := startProc(cmd)
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.cfg.Name, err)
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return nil
}

func (m *etcdMember) current() *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// waitServing waits until the member answers a linearizable read, which it
// can only do as part of a quorum.
func (m *etcdMember) waitServing(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.cfg.ClientURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = waitFor(wctx, func(ctx context.Context) error {
		if p := m.current(); !p.alive() {
			return fmt.Errorf("etcd member %s exited (see %s)", m.cfg.Name, m.logPath)
		}
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := cli.Get(rctx, "chaos-health")
		return err
	})
	if err != nil {
		return fmt.Errorf("etcd member %s not serving: %w", m.cfg.Name, err)
	}
	return nil
}

// restart kills the member (if it runs) and starts it again on its data
// dir, then waits until it serves.
func (m *etcdMember) restart(ctx context.Context) error {
	if err := m.current().kill(); err != nil {
		return err
	}
	if err := m.launch(); err != nil {
		return err
	}
	return m.waitServing(ctx)
}

// leader returns the member that is raft leader now, asking each member's
// maintenance Status.
func (c *etcdCluster) leader(ctx context.Context) (*etcdMember, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints(), DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	for _, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.cfg.ClientURL)
		cancel()
		if err != nil {
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no member says it is the leader")
}

// close kills every member.
func (c *etcdCluster) close() {
	for _, m := range c.members {
		if p := m.current(); p != nil {
			_ = p.kill()
		}
	}
}
