package taskservice

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file connects the node to its status voter (contract §7): which entries
// count as pending or running, where votes are written, and the unmapping
// of an identity that stayed inactive with no tasks.

// touchLocked recounts e for its identity's vote: a task counts while it
// is queued for a run or running. Caller holds n.mu.
func (n *Node) touchLocked(e *entry) {
	_, parked := n.parked[e] // a paused task is still pending
	want := !e.gone && !e.ident.lost && !e.purge && e.ex().overlapOf == nil && (e.running || e.idx >= 0 || parked || e.thawing)
	if want == e.counted {
		return
	}
	e.counted = want
	if e.ident.scope.owned() {
		d := -1
		if want {
			d = 1
		}
		n.voter.Add(e.ident.name, d)
	}
}

// sendVote writes an identity's status, fenced on its epoch: only the
// owner's vote is recorded.
func (n *Node) sendVote(id string, active bool) {
	n.mu.Lock()
	st := n.idents[id]
	if st == nil || st.lost {
		n.mu.Unlock()
		return
	}
	epoch := st.epoch
	n.mu.Unlock()
	txn, err := n.shapes.Vote(id, epoch, &storev1.Status{Node: n.cfg.Name, Active: active, Since: timestamppb.Now()})
	if err != nil {
		return
	}
	ctx, cancel := n.etcdCtx(n.life)
	defer cancel()
	_, err = n.writer.Commit(ctx, txn)
	if err != nil && n.life.Err() == nil {
		n.log.Warn("status vote not written", "identity", id, "active", active, "error", err)
		return
	}
	n.log.Trace("status vote", "identity", id, "active", active)
}

// unmapIdle removes the mapping of an identity that stayed inactive for the
// remove delay and has no tasks at all in etcd (finished tasks kept for
// retention count: their owner purges them first). One Txn, fenced on the
// epoch; the ownership watch then forgets it locally. Idempotency keys are
// not touched: an identity task's key goes with the task when it is purged,
// and an EVERY_NODE task's key must outlive the mapping (a retry with the
// same key must still find that task).
func (n *Node) unmapIdle(id string) {
	n.mu.Lock()
	st := n.idents[id]
	if st == nil || st.lost {
		n.mu.Unlock()
		return
	}
	epoch := st.epoch
	n.mu.Unlock()
	ctx, cancel := n.etcdCtx(n.life)
	defer cancel()
	resp, err := n.writer.Commit(ctx, n.shapes.UnmapIdle(id, epoch))
	if err != nil {
		if n.life.Err() == nil {
			n.log.Warn("unmap idle identity", "identity", id, "error", err)
		}
		return
	}
	if resp.Succeeded {
		n.log.Debug("unmapped idle identity", "identity", id)
		n.identityLeft(id, resp.Header.Revision)
	}
}
