package etcdfault

import "fmt"

// Op is the kind of an etcd call a Rule chooses.
type Op int

const (
	// OpAny matches every call (and, for watch actions, every watch event).
	OpAny Op = iota
	OpGet
	OpPut
	OpDelete
	OpTxn
	OpGrant
	OpKeepAliveOnce
	OpRevoke
	// OpWatch matches the events a watch delivers (see DropEvents,
	// DelayEvents, BreakWatch), not the Watch call itself.
	OpWatch
)

func (o Op) String() string {
	switch o {
	case OpAny:
		return "any"
	case OpGet:
		return "get"
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpTxn:
		return "txn"
	case OpGrant:
		return "grant"
	case OpKeepAliveOnce:
		return "keepalive-once"
	case OpRevoke:
		return "revoke"
	case OpWatch:
		return "watch"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Call describes one intercepted call: its kind and every key it touches.
// For a Txn, Keys holds the keys of its compares and of its Then and Else
// operations, those of nested Txns included (a batch of items is one Txn of
// nested Txns); for a watch event, the
// event's key; lease calls touch no key.
type Call struct {
	Op   Op
	Keys []string
}
