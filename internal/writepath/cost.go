package writepath

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// This file is the one place where a write is sized as etcd will size it
// (docs/architecture.md, "Txn sizing"): the encoded bytes of the request,
// compares and Else reads included, and its operations as etcd counts
// them, nested Txns included.

// Cost is what one write (compares, Then operations, Else operations)
// costs etcd.
type Cost struct {
	// alone is the encoded size of the write as a TxnRequest of its own.
	alone int
	// nested is what the write adds to a batch's TxnRequest, whose Then
	// holds it as a nested Txn: the TxnRequest wrapped in a RequestOp,
	// wrapped in an element of the batch's success list.
	nested int
	// width is the operations etcd's checkTxnRequest counts for the write
	// as a Txn: its widest list (compares, Then or Else), plus the widest
	// of the nested Txns it holds, which etcd checks against what its own
	// Txn leaves of --max-txn-ops. A batch of N items needs
	// N + max(width) ≤ --max-txn-ops.
	width int
	// writes are the keys the write puts or deletes, and ranges the ranges
	// it deletes: etcd refuses a Txn whose nested Txns write one key twice
	// (or put a key another deletes), so items that share one never share
	// a batch.
	writes []string
	ranges [][2]string
}

// CostOf sizes a write. It asks the etcd client itself for the request it
// would send (a KV over a client that only captures the request), so the
// size is exact: every field the client encodes, leases and sort orders
// included, counts.
//
// The compares are sized apart (the client sends each as it is, and
// handing them to it would clone each one twice): each is one element of
// the request's compare list.
func CostOf(cmps []clientv3.Cmp, ops, els []clientv3.Op) Cost {
	req := requestOf(ops, els)
	alone := proto.Size(req)
	for i := range cmps {
		c := cmps[i] // GetCompare fills in a nil compare: on a copy
		alone += tagged(proto.Size(c.GetCompare()))
	}
	c := Cost{alone: alone, nested: tagged(tagged(alone)), width: widthOf(req, len(cmps))}
	c.writes, c.ranges = writesOf(req, c.writes, c.ranges)
	return c
}

// tagged is the size of a length-delimited field of n bytes whose field
// number takes one byte of tag (every field of a TxnRequest and RequestOp).
func tagged(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// requestOf is the TxnRequest the etcd client sends for a write of these
// operations (and no compares).
func requestOf(ops, els []clientv3.Op) *etcdserverpb.TxnRequest {
	var c capture
	_, _ = clientv3.NewKVFromKVClient(&c, nil).Do(context.Background(), clientv3.OpTxn(nil, ops, els))
	return c.req
}

// capture is an etcd KV client that only records the Txn it is given.
type capture struct {
	etcdserverpb.KVClient // nil: only Txn is called
	req                   *etcdserverpb.TxnRequest
}

var errCaptured = errors.New("captured, not sent")

func (c *capture) Txn(_ context.Context, r *etcdserverpb.TxnRequest, _ ...grpc.CallOption) (*etcdserverpb.TxnResponse, error) {
	c.req = r
	return nil, errCaptured
}

// widthOf is the operations etcd counts for r with cmps compares besides
// its own (see Cost.width).
func widthOf(r *etcdserverpb.TxnRequest, cmps int) int {
	opc := max(cmps, len(r.Compare), len(r.Success), len(r.Failure))
	inner := 0
	for _, list := range [][]*etcdserverpb.RequestOp{r.Success, r.Failure} {
		for _, op := range list {
			if t := op.GetRequestTxn(); t != nil {
				inner = max(inner, widthOf(t, 0))
			}
		}
	}
	return opc + inner
}

// writesOf adds the keys r puts or deletes, and the ranges it deletes.
func writesOf(r *etcdserverpb.TxnRequest, keys []string, ranges [][2]string) ([]string, [][2]string) {
	for _, list := range [][]*etcdserverpb.RequestOp{r.Success, r.Failure} {
		for _, op := range list {
			switch {
			case op.GetRequestPut() != nil:
				keys = append(keys, string(op.GetRequestPut().Key))
			case op.GetRequestDeleteRange() != nil:
				d := op.GetRequestDeleteRange()
				if len(d.RangeEnd) == 0 {
					keys = append(keys, string(d.Key))
				} else {
					ranges = append(ranges, [2]string{string(d.Key), string(d.RangeEnd)})
				}
			case op.GetRequestTxn() != nil:
				keys, ranges = writesOf(op.GetRequestTxn(), keys, ranges)
			}
		}
	}
	return keys, ranges
}

// inRange reports whether key k falls in [r[0], r[1]) ("\x00" as the end:
// every key from r[0]).
func inRange(k string, r [2]string) bool {
	return k >= r[0] && (r[1] == "\x00" || k < r[1])
}

// RequestBudget is what a node lets one etcd request weigh: etcd's
// --max-request-bytes less room for what etcd adds around the Txn before
// it checks the size (its raft request's header: an id, the user name and
// auth revision), and never more than the Go client sends by default.
func RequestBudget(maxRequestBytes int) int {
	return min(maxRequestBytes, clientMaxSend) - requestMargin
}

const (
	// clientMaxSend is the Go etcd client's default send limit
	// (clientv3.Config.MaxCallSendMsgSize).
	clientMaxSend = 2 << 20
	// requestMargin is left of --max-request-bytes for etcd's own header.
	requestMargin = 1 << 10
)

// tooLarge is the ErrTooLarge of a write that does not fit, or nil.
func (c Cost) tooLarge(budget, maxOps int) error {
	switch {
	case c.alone > budget:
		return fmt.Errorf("%w: the write is %s encoded, the limit is %s (etcd's --max-request-bytes less %d bytes for its header)",
			ErrTooLarge, SizeText(c.alone), SizeText(budget), requestMargin)
	case c.width > maxOps:
		return fmt.Errorf("%w: the write needs %d operations, the limit is %d (etcd's --max-txn-ops)", ErrTooLarge, c.width, maxOps)
	}
	return nil
}

// SizeText writes a size in bytes, and in KiB or MiB when large.
func SizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// DefaultMaxRequestBytes is etcd's default --max-request-bytes.
const DefaultMaxRequestBytes = 1536 << 10
