package taskapi

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TaskFilter selects the tasks ListTasks returns; empty fields match all.
type TaskFilter struct {
	// Identity lists one identity's tasks (in creation order); empty lists
	// the whole cluster's (EVERY_NODE tasks first, then by identity).
	Identity string
	// States keeps tasks in one of these states, as GetTask shows them
	// (TASK_STATE_PAUSED for a paused task not running).
	States []taskdv1.TaskState
	Kind   string
	// Labels keeps tasks carrying every one of these pairs.
	Labels map[string]string
	// Node keeps tasks of identities that node owns, and EVERY_NODE tasks
	// (they run on every node).
	Node string
}

// listScanLimit bounds the records one cross-identity ListTasks call reads:
// a selective filter then returns a short page (even an empty one) with a
// token to go on from, instead of reading the whole keyspace in one call.
const listScanLimit = 10_000

// listChunk is how many records one etcd read of a listing fetches.
const listChunk = 500

func (f TaskFilter) match(t *taskdv1.Task) bool {
	if len(f.States) > 0 && !slices.Contains(f.States, t.State) {
		return false
	}
	if f.Kind != "" && t.Spec.GetKind() != f.Kind {
		return false
	}
	for k, v := range f.Labels {
		if got, ok := t.Spec.GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ListTasks returns a page of durable tasks matching f, and the token of
// the next page ("" after the last).
func (a *Service) ListTasks(ctx context.Context, f TaskFilter, pageSize int, pageToken string) ([]*taskdv1.Task, string, error) {
	if f.Identity != "" {
		return a.listIdentity(ctx, f, pageSize, pageToken)
	}
	var owned map[string]bool
	if f.Node != "" {
		cctx, cancel := a.etcdCtx(ctx)
		ids, err := a.cfg.Map.ListOwned(cctx, f.Node)
		cancel()
		if err != nil {
			return nil, "", err
		}
		owned = map[string]bool{}
		for _, id := range ids {
			owned[id] = true
		}
	}
	from := ""
	if pageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(pageToken)
		key := string(b)
		if err != nil || !(strings.HasPrefix(key, a.cfg.Keys.AllEvery()) || strings.HasPrefix(key, a.cfg.Keys.AllTasks())) {
			return nil, "", taskspec.Invalid("page_token", "is not a token from a previous response")
		}
		from = key + "\x00"
	}
	var out []*taskdv1.Task
	scanned := 0
	for _, prefix := range []string{a.cfg.Keys.AllEvery(), a.cfg.Keys.AllTasks()} {
		start := prefix
		if from != "" {
			if from >= clientv3.GetPrefixRangeEnd(prefix) {
				continue // this range is behind the token
			}
			if from > prefix {
				start = from
			}
		}
		every := prefix == a.cfg.Keys.AllEvery()
		for {
			cctx, cancel := a.etcdCtx(ctx)
			resp, err := a.cfg.Client.Get(cctx, start, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(listChunk))
			cancel()
			if err != nil {
				return nil, "", err
			}
			for _, kv := range resp.Kvs {
				key := string(kv.Key)
				scanned++
				if t, ok := a.listed(key, kv.Value, kv.ModRevision, every, owned, f); ok {
					out = append(out, t)
				}
				if len(out) == pageSize || scanned == listScanLimit {
					return out, base64.RawURLEncoding.EncodeToString(kv.Key), nil
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	return out, "", nil
}

// listed decodes one listed record and applies the filter.
func (a *Service) listed(key string, value []byte, rev int64, every bool, owned map[string]bool, f TaskFilter) (*taskdv1.Task, bool) {
	split := a.cfg.Keys.SplitTask
	if every {
		split = a.cfg.Keys.SplitEvery
	}
	id, _, err := split(key)
	if err != nil {
		return nil, false
	}
	if owned != nil && !every && !owned[id] {
		return nil, false
	}
	rec, err := pending.Decode(value)
	if err != nil {
		a.log.Error("undecodable task record in a listing", "key", key, "error", err)
		return nil, false
	}
	t := a.view(rec, rev)
	return t, f.match(t)
}

// listIdentity is ListTasks of one identity, in creation order.
func (a *Service) listIdentity(ctx context.Context, f TaskFilter, pageSize int, pageToken string) ([]*taskdv1.Task, string, error) {
	if pageToken != "" && !pending.ValidTaskID(pageToken) {
		return nil, "", taskspec.Invalid("page_token", "is not a token from a previous response")
	}
	var owner string
	if f.Node != "" {
		o, err := a.ownerOf(ctx, f.Identity, true)
		if err != nil {
			return nil, "", err
		}
		owner = o.Node
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	tasks, more, err := a.cfg.Store.ListBoth(cctx, f.Identity, pageToken, pageSize)
	if err != nil {
		return nil, "", err
	}
	var out []*taskdv1.Task
	for _, t := range tasks {
		v := a.view(t.Rec, t.Rev)
		if f.Node != "" && owner != f.Node && v.Spec.GetScope() != taskdv1.Scope_SCOPE_EVERY_NODE {
			continue
		}
		if f.match(v) {
			out = append(out, v)
		}
	}
	next := ""
	if more && len(tasks) > 0 {
		next = tasks[len(tasks)-1].Rec.Id
	}
	return out, next, nil
}
