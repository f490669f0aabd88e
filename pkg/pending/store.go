package pending

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Stored is a task record with the etcd mod revision it was read at:
// decoded (Rec), or only glanced at (Rec nil, Glance set, Raw its
// encoding) when the reader will not need it before it is due.
type Stored struct {
	Rec    *storev1.TaskRecord
	Rev    int64
	Glance Glance
	Raw    []byte
}

// TaskID is the stored task's id.
func (s *Stored) TaskID() string {
	if s.Rec != nil {
		return s.Rec.Id
	}
	return s.Glance.ID
}

// Store reads the task keyspace. Writes are built by internal/writepath
// (Shapes.PutTask, HistoryOps), so that they share one fenced Txn with the
// identity mapping compare. Every call needs a context with a deadline.
type Store struct {
	cli  *clientv3.Client
	read Reader
	keys keyspace.Keys
}

// Reader reads gets at one revision (writepath.Writer.Read: the one place
// a Txn is sent).
type Reader func(ctx context.Context, gets ...clientv3.Op) (*clientv3.TxnResponse, error)

// NewStore returns a Store over cli, whose reads of several keys at one
// revision go through read.
func NewStore(cli *clientv3.Client, read Reader, keys keyspace.Keys) *Store {
	return &Store{cli: cli, read: read, keys: keys}
}

// Keys returns the store's key layout.
func (s *Store) Keys() keyspace.Keys { return s.keys }

// Decode decodes a task record.
func Decode(b []byte) (*storev1.TaskRecord, error) {
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("decode task record: %w", err)
	}
	return rec, nil
}

// Encode encodes a task record.
func Encode(rec *storev1.TaskRecord) ([]byte, error) {
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", rec.GetId(), err)
	}
	return b, nil
}

// Get reads one task; ok is false when it does not exist.
func (s *Store) Get(ctx context.Context, id, taskID string) (st Stored, ok bool, err error) {
	resp, err := s.cli.Get(ctx, s.keys.Task(id, taskID))
	if err != nil {
		return Stored{}, false, fmt.Errorf("read task %s of %q: %w", taskID, id, err)
	}
	if len(resp.Kvs) == 0 {
		return Stored{}, false, nil
	}
	rec, err := Decode(resp.Kvs[0].Value)
	if err != nil {
		return Stored{}, false, err
	}
	return Stored{Rec: rec, Rev: resp.Kvs[0].ModRevision}, true, nil
}

// List reads up to limit tasks of id whose ids come after afterID ("" for
// the first page), in creation order; more says whether any remain.
func (s *Store) List(ctx context.Context, id, afterID string, limit int) (tasks []Stored, more bool, err error) {
	return s.list(ctx, s.keys.Tasks(id), afterID, limit)
}

// LoadAll reads every task of id at one revision, in pages, and returns that
// revision. A page whose answer is too large to receive is read again in
// pages half as long, down to one task a page.
func (s *Store) LoadAll(ctx context.Context, id string) ([]Stored, int64, error) {
	prefix := s.keys.Tasks(id)
	end := clientv3.GetPrefixRangeEnd(prefix)
	var out []Stored
	from, rev, limit := prefix, int64(0), int64(500)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(limit)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, from, opts...)
		if err != nil && limit > 1 && etcdstatus.TooLarge(err) {
			limit /= 2
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("load tasks of %q: %w", id, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			rec, err := Decode(kv.Value)
			if err != nil {
				return nil, 0, fmt.Errorf("task key %s: %w", kv.Key, err)
			}
			out = append(out, Stored{Rec: rec, Rev: kv.ModRevision})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Count counts id's tasks without reading them.
func (s *Store) Count(ctx context.Context, id string) (int64, error) {
	resp, err := s.cli.Get(ctx, s.keys.Tasks(id), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count tasks of %q: %w", id, err)
	}
	return resp.Count, nil
}

// Runs reads a task's history, newest first.
func (s *Store) Runs(ctx context.Context, id, taskID string) ([]*taskdv1.Run, error) {
	resp, err := s.cli.Get(ctx, s.keys.Runs(id, taskID), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, fmt.Errorf("read runs of task %s: %w", taskID, err)
	}
	return decodeRuns(resp.Kvs)
}

// decodeRuns decodes run history entries, in the order given.
func decodeRuns(kvs []*mvccpb.KeyValue) ([]*taskdv1.Run, error) {
	runs := make([]*taskdv1.Run, 0, len(kvs))
	for _, kv := range kvs {
		var rr storev1.RunRecord
		if err := proto.Unmarshal(kv.Value, &rr); err != nil {
			return nil, fmt.Errorf("decode run %s: %w", kv.Key, err)
		}
		runs = append(runs, rr.Run)
	}
	return runs, nil
}

// IdemLookup returns the task id stored under an idempotency key.
func (s *Store) IdemLookup(ctx context.Context, id, key string) (taskID string, ok bool, err error) {
	resp, err := s.cli.Get(ctx, s.keys.Idem(id, key))
	if err != nil {
		return "", false, fmt.Errorf("read idempotency key of %q: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}
