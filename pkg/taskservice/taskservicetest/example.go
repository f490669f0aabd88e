package taskservicetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the set-up of the runnable examples (Example functions of
// pkg/taskservice and pkg/builtin), which have no *testing.T: what they
// cannot do they panic on, as a main function would.

// ExampleEtcd is an embedded etcd in a temporary directory, with a client.
type ExampleEtcd struct {
	Client *clientv3.Client
	server *etcdembed.Server
	dir    string
}

// StartExampleEtcd starts an embedded single-member etcd on a free
// loopback port.
func StartExampleEtcd() *ExampleEtcd {
	dir, err := os.MkdirTemp("", "taskd-example-")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	cli, err := taskservice.DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		srv.Close()
		os.RemoveAll(dir)
		panic(err)
	}
	return &ExampleEtcd{Client: cli, server: srv, dir: dir}
}

// StartNode creates and starts a node over e with cfg (Client is filled
// in; Name is "example" when empty).
func (e *ExampleEtcd) StartNode(cfg taskservice.Config) *taskservice.Node {
	cfg.Client = e.Client
	if cfg.Name == "" {
		cfg.Name = "example"
	}
	n, err := taskservice.New(cfg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		panic(err)
	}
	return n
}

// Close closes the client and etcd and removes the directory; stop the
// nodes first.
func (e *ExampleEtcd) Close() {
	_ = e.Client.Close()
	e.server.Close()
	_ = os.RemoveAll(e.dir)
}

// ExampleNode starts an embedded etcd and one node on it (StartNode with
// cfg); stop stops the node, then etcd.
func ExampleNode(cfg taskservice.Config) (node *taskservice.Node, stop func()) {
	e := StartExampleEtcd()
	n := e.StartNode(cfg)
	return n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
		e.Close()
	}
}

var errFinal = errors.New("final")

// WaitFinal returns the task once it is in a final state (COMPLETED, DEAD
// or CANCELED), or ctx's error. It watches the task's events from the
// write it was read at, so no change is missed, and reads the task again
// after each batch of them.
func WaitFinal(ctx context.Context, n *taskservice.Node, identity, taskID string) (*taskdv1.Task, error) {
	t, err := n.GetTask(ctx, identity, taskID)
	if err != nil || final(t) {
		return t, err
	}
	// A cursor names the last event seen: every event of the revision
	// before the task's, so the watch yields that write's events and on.
	cursor := fmt.Sprintf("%d.%d", t.GetRevision()-1, math.MaxInt32)
	err = n.WatchEvents(ctx, taskservice.EventFilter{Identity: identity, TaskID: taskID}, cursor, func([]*taskdv1.Event) error {
		var err error
		if t, err = n.GetTask(ctx, identity, taskID); err != nil {
			return err
		}
		if final(t) {
			return errFinal
		}
		return nil
	})
	if errors.Is(err, errFinal) {
		return t, nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return nil, err
}

func final(t *taskdv1.Task) bool {
	switch t.GetState() {
	case taskdv1.TaskState_TASK_STATE_COMPLETED, taskdv1.TaskState_TASK_STATE_DEAD, taskdv1.TaskState_TASK_STATE_CANCELED:
		return true
	}
	return false
}
