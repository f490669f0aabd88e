package writepath

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/handoff"
	"github.com/taskd/taskd/pkg/identity"
)

// The shapes of placement: identities moved between nodes (a planned move,
// a drain, a dead node's identities taken over, rebalancing), adopted by
// their node after a restart, and the placement leader's sweeps. Every
// write of the leader carries its Leadership compare.

// Move is one identity going from its owner to a node: from the epoch it
// has (or from nothing, when Mapped is false) to To (incarnation ToInc),
// registered under ToLease.
type Move struct {
	Identity string
	Mapped   bool
	Epoch    int64
	FromNode string
	To       string
	ToInc    string
	ToLease  int64
}

// Moves carries out moves in one Txn: each identity fenced on its epoch (or
// on being unmapped), each target on its registration's lease, the mapping
// and ownership index rewritten, and the target handed the identity's
// tasks through a handoff entry ("*"). extra compares and then operations
// of the caller's own go in the same Txn; orElse is read when a compare
// fails. Four operations per move (MovesPerTxn).
func (s Shapes) Moves(moves []Move, extra []clientv3.Cmp, then, orElse []clientv3.Op) (Txn, error) {
	cmps := append([]clientv3.Cmp(nil), extra...)
	ops := append([]clientv3.Op(nil), then...)
	targets := map[string]bool{}
	for _, m := range moves {
		if m.Mapped {
			cmps = append(cmps, s.Epoch(m.Identity, m.Epoch))
		} else {
			cmps = append(cmps, s.Unmapped(m.Identity))
		}
		if !targets[m.To] {
			targets[m.To] = true
			cmps = append(cmps, s.RegisteredAs(m.To, m.ToLease))
		}
		ops = append(ops, s.Assign(m.Identity, m.FromNode, m.To, m.ToInc)...)
		op, err := s.Handoff(m.To, m.Identity, "*")
		if err != nil {
			return Txn{}, err
		}
		ops = append(ops, op)
	}
	return Txn{If: cmps, Then: ops, Else: orElse}, nil
}

// MovesPerTxn is how many moves fit in one Txn of at most maxOps
// operations, leaving room for the caller's own.
func MovesPerTxn(maxOps int) int {
	if b := (maxOps - 8) / 5; b > 0 {
		return b
	}
	return 1
}

// Handoff is the write of a handoff entry in node's area, from this node:
// load task taskID of identity id ("*": all of its tasks).
func (s Shapes) Handoff(node, id, taskID string) (clientv3.Op, error) {
	op, err := PutHandoff(s.keys, node, s.node, id, taskID)
	if err != nil {
		return clientv3.Op{}, fmt.Errorf("handoff of %q to %s: %w", id, node, err)
	}
	return op, nil
}

// Reassign moves identity id from the owner it had at epoch on node
// fromNode to this node (incarnation inc), fenced on the epoch and on
// extra (this node's registration compare, which every write that maps an
// identity to a node carries). Its revision is the new epoch.
func (s Shapes) Reassign(id string, epoch int64, fromNode, inc string, extra ...clientv3.Cmp) Txn {
	return Txn{
		If:   append([]clientv3.Cmp{s.Epoch(id, epoch)}, extra...),
		Then: s.Assign(id, fromNode, s.node, inc),
	}
}

// DropArea deletes the handoff area of a dead node, if l still leads and
// the node is still absent.
func (s Shapes) DropArea(l identity.Leadership, dead string, absent clientv3.Cmp) Txn {
	return Txn{If: []clientv3.Cmp{l.Fence(), absent},
		Then: []clientv3.Op{clientv3.OpDelete(s.keys.Area(dead), clientv3.WithPrefix())}}
}

// LeaderDeletes deletes keys if l still leads and each of guards holds.
func (s Shapes) LeaderDeletes(l identity.Leadership, guards []clientv3.Cmp, keys ...string) Txn {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpDelete(k)
	}
	return Txn{If: append(append([]clientv3.Cmp(nil), guards...), l.Fence()), Then: ops}
}

// PurgeEvery writes ops (the deletes of a cancelled EVERY_NODE task past
// its retention) if l still leads and the task's key is still at rev.
func (s Shapes) PurgeEvery(l identity.Leadership, key string, rev int64, ops []clientv3.Op) Txn {
	return Txn{If: []clientv3.Cmp{l.Fence(), At(key, rev)}, Then: ops}
}

// At is the compare that key's mod revision is rev (0: absent).
func At(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}

// Created is the compare that key's create revision is rev.
func Created(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(key), "=", rev)
}

// RebalanceRequest writes a rebalancing request req into node's control
// key, under node's lease (a request dies with its node), if l still leads,
// the node's registration is at regRev and the key at was (0: absent).
func (s Shapes) RebalanceRequest(l identity.Leadership, key, node string, regRev, was, lease int64, req string) Txn {
	return Txn{
		If:   []clientv3.Cmp{l.Fence(), At(s.keys.Node(node), regRev), At(key, was)},
		Then: []clientv3.Op{clientv3.OpPut(key, req, clientv3.WithLease(clientv3.LeaseID(lease)))},
	}
}

// DeleteAt deletes key if it still stands at rev.
func DeleteAt(key string, rev int64) Txn {
	return Txn{If: []clientv3.Cmp{At(key, rev)}, Then: []clientv3.Op{clientv3.OpDelete(key)}}
}

// Owned is an identity this node owns at Epoch, as its previous
// incarnation left it.
type Owned struct {
	Identity string
	Epoch    int64
}

// Adopt re-maps to this node's incarnation inc, in one Txn, the identities
// its previous incarnation owned: fenced on registered (this node's
// registration compare) and on each identity's epoch. Its revision is
// each identity's new epoch.
func (s Shapes) Adopt(registered clientv3.Cmp, inc string, ids []Owned) Txn {
	t := Txn{If: []clientv3.Cmp{registered}}
	for _, o := range ids {
		t.If = append(t.If, s.Epoch(o.Identity, o.Epoch))
		t.Then = append(t.Then, s.Assign(o.Identity, s.node, s.node, inc)...)
	}
	return t
}

// Claim is a campaign's write for the leader key (identity.Campaign):
// create key with value under lease only if it is absent; else read it.
func (s Shapes) Claim(key, value string, lease clientv3.LeaseID) Txn {
	return Txn{
		If:   []clientv3.Cmp{Created(key, 0)},
		Then: []clientv3.Op{clientv3.OpPut(key, value, clientv3.WithLease(lease))},
		Else: []clientv3.Op{clientv3.OpGet(key)},
	}
}

// DeleteEach deletes the handoff entries taken, each in a Txn of its own
// nested in one, that holds only while the entry is still at the revision
// taken: a newer write to the same key stays.
func DeleteEach(taken []handoff.Taken) Txn {
	ops := make([]clientv3.Op, len(taken))
	for i, t := range taken {
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{At(t.Key, t.Rev)}, []clientv3.Op{clientv3.OpDelete(t.Key)}, nil)
	}
	return Txn{Then: ops}
}

// HandoffDeleter is a handoff.Watcher's Delete over w.
func HandoffDeleter(w Writer) func(ctx context.Context, taken []handoff.Taken) error {
	return func(ctx context.Context, taken []handoff.Taken) error {
		_, err := w.Commit(ctx, DeleteEach(taken))
		return err
	}
}
