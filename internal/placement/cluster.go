package placement

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Cluster is the cluster as placement sees it: the registered nodes, with
// their loads, as the candidates to take identities, and the Txns that move
// identities between them (contract §3.1-3.2). Every move is one Txn: the
// identity's epoch compare, the new mapping (a new epoch), the ownership
// index, and a handoff entry in the new owner's area. The leader, a planned
// move, a drain and a rebalancing request's serving all move through it.
type Cluster struct {
	Client      *clientv3.Client
	Keys        keyspace.Keys
	Map         *identity.Map // the identities' mappings, for the loads
	Shapes      writepath.Shapes
	Writer      writepath.Writer
	EtcdTimeout time.Duration // bounds each call
	MaxTxnOps   int           // etcd's --max-txn-ops
}

func (c Cluster) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.EtcdTimeout)
}

// Candidate is a node that can take identities.
type Candidate struct {
	Name, Inc string
	Lease     int64 // the registration's lease: the Txn compares it
	Rev       int64 // the registration's revision (it changes with the state)
	State     taskdv1.NodeState
	Load      int64
}

// Candidates reads the registered nodes with their loads.
func (c Cluster) Candidates(ctx context.Context) ([]*Candidate, error) {
	cctx, cancel := c.etcdCtx(ctx)
	defer cancel()
	resp, err := c.Client.Get(cctx, c.Keys.Nodes(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []*Candidate
	for _, kv := range resp.Kvs {
		var rec storev1.NodeRecord
		if err := proto.Unmarshal(kv.Value, &rec); err != nil {
			continue
		}
		load, err := c.Map.CountOwned(cctx, rec.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, &Candidate{Name: rec.Name, Inc: rec.Incarnation, Lease: kv.Lease, Rev: kv.ModRevision,
			State: rec.State, Load: load})
	}
	return out, nil
}

// Running keeps the RUNNING candidates other than exclude.
func Running(cs []*Candidate, exclude string) []*Candidate {
	var out []*Candidate
	for _, c := range cs {
		if c.State == taskdv1.NodeState_NODE_STATE_RUNNING && c.Name != exclude {
			out = append(out, c)
		}
	}
	return out
}

// LeastLoaded picks the candidate with the fewest identities and counts one
// more for it.
func LeastLoaded(cs []*Candidate) *Candidate {
	best := cs[0]
	for _, c := range cs[1:] {
		if c.Load < best.Load || (c.Load == best.Load && c.Name < best.Name) {
			best = c
		}
	}
	best.Load++
	return best
}

// Move is one identity going from its owner to a node.
type Move struct {
	From identity.Owner
	To   *Candidate
}

// CommitMoves carries out moves in one Txn, with extra compares; ok is
// false (nothing written) if any compare failed.
func (c Cluster) CommitMoves(ctx context.Context, moves []Move, extra ...clientv3.Cmp) (rev int64, ok bool, err error) {
	resp, err := c.CommitMovesTxn(ctx, moves, extra, nil, nil)
	if err != nil {
		return 0, false, err
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// CommitMovesTxn is CommitMoves with operations of the caller's own: then
// written with the moves, orElse read when a compare failed.
func (c Cluster) CommitMovesTxn(ctx context.Context, moves []Move, extra []clientv3.Cmp, then, orElse []clientv3.Op) (*clientv3.TxnResponse, error) {
	ms := make([]writepath.Move, len(moves))
	for i, m := range moves {
		ms[i] = writepath.Move{Identity: m.From.Identity, Mapped: m.From.Mapped, Epoch: m.From.Epoch, FromNode: m.From.Node,
			To: m.To.Name, ToInc: m.To.Inc, ToLease: m.To.Lease}
	}
	txn, err := c.Shapes.Moves(ms, extra, then, orElse)
	if err != nil {
		return nil, err
	}
	cctx, cancel := c.etcdCtx(ctx)
	defer cancel()
	resp, err := c.Writer.Commit(cctx, txn)
	if err != nil {
		return nil, fmt.Errorf("move identities: %w", err)
	}
	return resp, nil
}

// MovesPerTxn is how many moves fit in one Txn (4 operations each).
func (c Cluster) MovesPerTxn() int { return writepath.MovesPerTxn(c.MaxTxnOps) }

// NamesUnder lists the node names of the per-node areas under prefix
// (prefix<node>/...), one read per node: it jumps from one node's area to
// the next.
func (c Cluster) NamesUnder(ctx context.Context, prefix string) ([]string, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	var names []string
	for {
		cctx, cancel := c.etcdCtx(ctx)
		resp, err := c.Client.Get(cctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		if len(resp.Kvs) == 0 {
			return names, nil
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(string(resp.Kvs[0].Key), prefix), "/")
		names = append(names, name)
		from = clientv3.GetPrefixRangeEnd(prefix + name + "/")
	}
}
