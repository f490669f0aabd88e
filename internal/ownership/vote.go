package ownership

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the writing side of the status vote (contract §7): the
// voter (pkg/vote) decides when an identity is active or idle; the owner's
// vote is written fenced on its epoch, and an identity that stayed idle
// with no tasks is unmapped.

// SendVote writes an identity's status, fenced on its epoch: only the
// owner's vote is recorded.
func (h *Holder) SendVote(id string, active bool) {
	epoch, ok := h.engine.Held(id)
	if !ok {
		return
	}
	txn, err := h.cfg.Shapes.Vote(id, epoch, &storev1.Status{Node: h.cfg.Name, Active: active, Since: timestamppb.Now()})
	if err != nil {
		return
	}
	ctx, cancel := h.etcdCtx(h.cfg.Life)
	defer cancel()
	_, err = h.cfg.Writer.Commit(ctx, txn)
	if err != nil && h.cfg.Life.Err() == nil {
		h.log.Warn("status vote not written", "identity", id, "active", active, "error", err)
		return
	}
	h.log.Trace("status vote", "identity", id, "active", active)
}

// UnmapIdle removes the mapping of an identity that stayed inactive for
// the remove delay and has no tasks at all in etcd (finished tasks kept for
// retention count: their owner purges them first). One Txn, fenced on the
// epoch; the engine then forgets it. Idempotency keys are not touched: an
// identity task's key goes with the task when it is purged, and an
// EVERY_NODE task's key must outlive the mapping (a retry with the same
// key must still find that task).
func (h *Holder) UnmapIdle(id string) {
	epoch, ok := h.engine.Held(id)
	if !ok {
		return
	}
	ctx, cancel := h.etcdCtx(h.cfg.Life)
	defer cancel()
	resp, err := h.cfg.Writer.Commit(ctx, h.cfg.Shapes.UnmapIdle(id, epoch))
	if err != nil {
		if h.cfg.Life.Err() == nil {
			h.log.Warn("unmap idle identity", "identity", id, "error", err)
		}
		return
	}
	if resp.Succeeded {
		h.log.Debug("unmapped idle identity", "identity", id)
		h.engine.Left(id, resp.Header.Revision)
	}
}
