package writepath

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdstatus"
)

// Txn is one etcd transaction as a value: its compares, what it does when
// they hold (Then) and what it reads when one fails (Else). A Txn is built
// by one of this package's builders, which know its shape (which compare
// guards what, which Else response says why it failed), and sent by a
// Writer (alone) or a Batcher (sharing a request with other Txns).
type Txn struct {
	If   []clientv3.Cmp
	Then []clientv3.Op
	Else []clientv3.Op
	// reads names what each Else operation reads (Refusal), for the shapes
	// whose Else explains a failed fence.
	reads []read
}

// Cost sizes t as etcd will (cost.go).
func (t Txn) Cost() Cost { return CostOf(t.If, t.Then, t.Else) }

// op is t nested in another Txn (a batch).
func (t Txn) op() clientv3.Op { return clientv3.OpTxn(t.If, t.Then, t.Else) }

func (t Txn) commit(ctx context.Context, cli *clientv3.Client) (*clientv3.TxnResponse, error) {
	return cli.Txn(ctx).If(t.If...).Then(t.Then...).Else(t.Else...).Commit()
}

// Writer sends Txns alone, each in a request of its own: the writes that
// are not batched (placement's moves, follower rewrites, reads at one
// revision). It holds no state; the caller's context bounds each call.
type Writer struct {
	cli *clientv3.Client
}

// NewWriter returns a Writer over cli.
func NewWriter(cli *clientv3.Client) Writer { return Writer{cli: cli} }

// Commit sends t and returns etcd's answer as it is: an error is etcd's or
// the client's (etcdstatus classifies it), never reworded.
func (w Writer) Commit(ctx context.Context, t Txn) (*clientv3.TxnResponse, error) {
	return t.commit(ctx, w.cli)
}

// Read reads all of gets at one revision (a Txn of Gets only, which writes
// nothing).
func (w Writer) Read(ctx context.Context, gets ...clientv3.Op) (*clientv3.TxnResponse, error) {
	return w.cli.Txn(ctx).Then(gets...).Commit()
}

// Ambiguous marks a failed Txn whose outcome is unknown: etcd may have
// applied it all the same (a timeout or a lost connection after the request
// was sent). An error that etcd cannot have applied (etcdstatus.NotApplied:
// an error the server answered with, such as the space quota or a compare
// on a bad key, or the client's refusal to send) is definite and returned
// as it is; one that refuses the request for its size also wraps
// ErrTooLarge, so that no loop retries it as if etcd were down.
func Ambiguous(err error) error {
	if refusedForSize(err) {
		return fmt.Errorf("%w: etcd refused the write: %w", ErrTooLarge, err)
	}
	if etcdstatus.NotApplied(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// refusedForSize reports a definite refusal of a request for its size or
// number of operations (or a duplicate key, which the sizing keeps out of
// batches): nothing was applied.
func refusedForSize(err error) bool {
	return (etcdstatus.TooLarge(err) || errors.Is(err, rpctypes.ErrDuplicateKey) || errors.Is(err, rpctypes.ErrGRPCDuplicateKey)) &&
		etcdstatus.NotApplied(err)
}

// ErrOutcomeUnknown reports a write whose outcome is unknown: etcd may or
// may not have applied it (a timeout after the request was sent).
// taskservice.ErrOutcomeUnknown is this error.
var ErrOutcomeUnknown = errors.New("the write's outcome is unknown (it may have been applied)")

// ErrTooLarge reports a write larger than etcd takes in one request: it
// was not sent, or etcd refused it; nothing was written and sending it
// again cannot succeed. taskservice.ErrTooLarge is this error.
var ErrTooLarge = errors.New("too large for one etcd request")
