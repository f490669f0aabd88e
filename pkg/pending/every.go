package pending

import (
	"context"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A task of scope EVERY_NODE is stored once, at Every(identity, id), and
// each node keeps its own progress at EveryProgress(node, id) and its own
// history under EveryRuns(id) (keyspace.Keys). The reads below look a task up under either
// scope, so that the API does not need to know which one a task has.

// Found is a task read under either scope.
type Found struct {
	Stored
	Key   string
	Every bool
}

// Find reads the task id of identity under either scope, in one Txn.
func (s *Store) Find(ctx context.Context, id, taskID string) (f Found, ok bool, err error) {
	tk, ek := s.keys.Task(id, taskID), s.keys.Every(id, taskID)
	resp, err := s.read(ctx, clientv3.OpGet(tk), clientv3.OpGet(ek))
	if err != nil {
		return Found{}, false, fmt.Errorf("read task %s of %q: %w", taskID, id, err)
	}
	for i, key := range []string{tk, ek} {
		kvs := resp.Responses[i].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue
		}
		rec, err := Decode(kvs[0].Value)
		if err != nil {
			return Found{}, false, err
		}
		return Found{Stored: Stored{Rec: rec, Rev: kvs[0].ModRevision}, Key: key, Every: i == 1}, true, nil
	}
	return Found{}, false, nil
}

// ListBoth reads up to limit tasks of id of both scopes, merged in id
// (creation) order, after afterID.
func (s *Store) ListBoth(ctx context.Context, id, afterID string, limit int) ([]Stored, bool, error) {
	a, moreA, err := s.List(ctx, id, afterID, limit)
	if err != nil {
		return nil, false, err
	}
	b, moreB, err := s.list(ctx, s.keys.EveryTasks(id), afterID, limit)
	if err != nil {
		return nil, false, err
	}
	all := append(a, b...)
	sort.Slice(all, func(i, j int) bool { return all[i].Rec.Id < all[j].Rec.Id })
	more := moreA || moreB
	if len(all) > limit {
		all, more = all[:limit], true
	}
	return all, more, nil
}

func (s *Store) list(ctx context.Context, prefix, afterID string, limit int) ([]Stored, bool, error) {
	from := prefix
	if afterID != "" {
		from = prefix + afterID + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", prefix, err)
	}
	var out []Stored
	for _, kv := range resp.Kvs {
		rec, err := Decode(kv.Value)
		if err != nil {
			return nil, false, fmt.Errorf("task key %s: %w", kv.Key, err)
		}
		out = append(out, Stored{Rec: rec, Rev: kv.ModRevision})
	}
	return out, resp.More, nil
}

// CountBoth counts id's tasks of both scopes.
func (s *Store) CountBoth(ctx context.Context, id string) (int64, error) {
	resp, err := s.read(ctx,
		clientv3.OpGet(s.keys.Tasks(id), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(s.keys.EveryTasks(id), clientv3.WithPrefix(), clientv3.WithCountOnly()),
	)
	if err != nil {
		return 0, fmt.Errorf("count tasks of %q: %w", id, err)
	}
	return resp.Responses[0].GetResponseRange().Count + resp.Responses[1].GetResponseRange().Count, nil
}

// EveryRunsOf reads every node's history of an EVERY_NODE task, newest first.
func (s *Store) EveryRunsOf(ctx context.Context, taskID string) ([]*taskdv1.Run, error) {
	resp, err := s.cli.Get(ctx, s.keys.EveryRuns(taskID), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read runs of task %s: %w", taskID, err)
	}
	runs, err := decodeRuns(resp.Kvs)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(runs, func(i, j int) bool {
		return runs[i].GetStartedAt().AsTime().After(runs[j].GetStartedAt().AsTime())
	})
	return runs, nil
}
