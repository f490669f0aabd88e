package pending

import (
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Keys lays out the task keyspace under a cluster prefix.
type Keys struct{ prefix string }

// NewKeys returns the task keys under prefix (which ends in '/').
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// Task is the key of one task.
func (k Keys) Task(id, taskID string) string {
	return k.prefix + "task/" + identity.Encode(id) + "/" + taskID
}

// Tasks is the prefix of all of an identity's tasks.
func (k Keys) Tasks(id string) string { return k.prefix + "task/" + identity.Encode(id) + "/" }

// AllTasks is the prefix of every task of the cluster.
func (k Keys) AllTasks() string { return k.prefix + "task/" }

// Runs is the prefix of one task's run history.
func (k Keys) Runs(id, taskID string) string {
	return k.prefix + "runs/" + identity.Encode(id) + "/" + taskID + "/"
}

// Run is the key of history entry seq of a task.
func (k Keys) Run(id, taskID string, seq int64) string {
	return fmt.Sprintf("%s%016x", k.Runs(id, taskID), seq)
}

// Result is the key of a run result forwarded to the identity's new owner
// (storev1.ForwardedResult): the old owner writes it while its run marker
// still stands on the task; the owner that settles the marker deletes it.
func (k Keys) Result(id, taskID string) string {
	return k.prefix + "result/" + identity.Encode(id) + "/" + taskID
}

// Idem is the key of an idempotency key of an identity.
func (k Keys) Idem(id, key string) string {
	return k.prefix + "idem/" + identity.Encode(id) + "/" + identity.Encode(key)
}

// IdemPrefix is the prefix of an identity's idempotency keys.
func (k Keys) IdemPrefix(id string) string { return k.prefix + "idem/" + identity.Encode(id) + "/" }

// TaskAt is the compare that holds while the task's record is at rev (0:
// while it does not exist).
func (k Keys) TaskAt(id, taskID string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(k.Task(id, taskID)), "=", rev)
}

// SplitTask parses a task key into identity and task id.
func (k Keys) SplitTask(key string) (id, taskID string, err error) {
	return k.split(key, "task/")
}

// split parses "<prefix><kind><identity>/<task-id>".
func (k Keys) split(key, kind string) (id, taskID string, err error) {
	rest, ok := strings.CutPrefix(key, k.prefix+kind)
	if !ok {
		return "", "", fmt.Errorf("key %q is not a %s key", key, strings.TrimSuffix(kind, "/"))
	}
	enc, taskID, ok := strings.Cut(rest, "/")
	if !ok || enc == "" || taskID == "" || strings.Contains(taskID, "/") {
		return "", "", fmt.Errorf("key %q is not a %s key", key, strings.TrimSuffix(kind, "/"))
	}
	id, err = identity.Decode(enc)
	return id, taskID, err
}

// Every is the key of a task of scope EVERY_NODE: stored once, run by
// every node.
func (k Keys) Every(id, taskID string) string {
	return k.prefix + "every/" + identity.Encode(id) + "/" + taskID
}

// EveryTasks is the prefix of an identity's EVERY_NODE tasks.
func (k Keys) EveryTasks(id string) string { return k.prefix + "every/" + identity.Encode(id) + "/" }

// AllEvery is the prefix of every EVERY_NODE task of the cluster.
func (k Keys) AllEvery() string { return k.prefix + "every/" }

// EveryProgress is the key of one node's progress on an EVERY_NODE task.
func (k Keys) EveryProgress(node, taskID string) string {
	return k.prefix + "everynode/" + node + "/" + taskID
}

// EveryProgressOf is the prefix of one node's progress keys.
func (k Keys) EveryProgressOf(node string) string { return k.prefix + "everynode/" + node + "/" }

// AllEveryProgress is the prefix of every node's progress on EVERY_NODE
// tasks: AllEveryProgress() + node + "/" is EveryProgressOf(node).
func (k Keys) AllEveryProgress() string { return k.prefix + "everynode/" }

// EveryRuns is the prefix of an EVERY_NODE task's history, all nodes.
func (k Keys) EveryRuns(taskID string) string { return k.prefix + "everyruns/" + taskID + "/" }

// EveryRun is the key of history entry seq of node's runs of a task.
func (k Keys) EveryRun(taskID, node string, seq int64) string {
	return fmt.Sprintf("%s%s/%016x", k.EveryRuns(taskID), node, seq)
}

// SplitEvery parses an EVERY_NODE task key into identity and task id.
func (k Keys) SplitEvery(key string) (id, taskID string, err error) {
	return k.split(key, "every/")
}

// Pauses is the prefix of the identity and kind pauses in force
// (taskdv1.Pause values); every node follows it.
func (k Keys) Pauses() string { return k.prefix + "pause/" }

// PauseIdentity is the key whose presence pauses every task of an identity.
// A start of one of its tasks compares that it is absent.
func (k Keys) PauseIdentity(id string) string {
	return k.prefix + "pause/identity/" + identity.Encode(id)
}

// PauseKind is the key whose presence pauses every task of a kind.
func (k Keys) PauseKind(kind string) string { return k.prefix + "pause/kind/" + identity.Encode(kind) }

// SplitPause parses a pause key: exactly one of id and kind is set.
func (k Keys) SplitPause(key string) (id, kind string, err error) {
	rest, ok := strings.CutPrefix(key, k.Pauses())
	if !ok {
		return "", "", fmt.Errorf("key %q is not a pause key", key)
	}
	if enc, ok := strings.CutPrefix(rest, "identity/"); ok {
		id, err = identity.Decode(enc)
		return id, "", err
	}
	if enc, ok := strings.CutPrefix(rest, "kind/"); ok {
		kind, err = identity.Decode(enc)
		return "", kind, err
	}
	return "", "", fmt.Errorf("key %q is not a pause key", key)
}

// Tokens is the prefix of the bearer tokens stored in etcd
// (storev1.TokenRecord values); every node that checks tokens follows it.
func (k Keys) Tokens() string { return k.prefix + "token/" }

// Token is the key of the stored token id (ids are letters, digits, _ and
// -, so they need no encoding).
func (k Keys) Token(id string) string { return k.prefix + "token/" + id }

// Calendars is the prefix of the stored calendars (taskdv1.Calendar
// values); every node follows it.
func (k Keys) Calendars() string { return k.prefix + "cal/" }

// Calendar is the key of one calendar.
func (k Keys) Calendar(name string) string { return k.prefix + "cal/" + identity.Encode(name) }

// SplitCalendar parses a calendar key into its name.
func (k Keys) SplitCalendar(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, k.Calendars())
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", fmt.Errorf("key %q is not a calendar key", key)
	}
	return identity.Decode(rest)
}

// CalendarUsers is the prefix of the references to calendar name: one key
// per task that lists it (CalendarTaskRef, or CalendarLocalRef for a
// non-durable task) and per calendar based on it (CalendarBaseRef). A calendar is deleted only while it has none.
func (k Keys) CalendarUsers(name string) string {
	return k.prefix + "calref/" + identity.Encode(name) + "/"
}

// CalendarTaskRef is the reference of task taskID of identity id to
// calendar name, written and removed with the task.
func (k Keys) CalendarTaskRef(name, id, taskID string) string {
	return k.CalendarUsers(name) + "t/" + identity.Encode(id) + "/" + taskID
}

// CalendarLocalRef is the reference of non-durable task taskID of
// identity id, held by node, to calendar name: written under the node's
// lease, so it ends with the node if the task does not end first.
func (k Keys) CalendarLocalRef(name, node, id, taskID string) string {
	return k.CalendarUsers(name) + "n/" + node + "/" + identity.Encode(id) + "/" + taskID
}

// CalendarBaseRef is the reference of calendar user to its base name.
func (k Keys) CalendarBaseRef(name, user string) string {
	return k.CalendarUsers(name) + "c/" + identity.Encode(user)
}

// CalendarRefOps are the puts (or, with del, deletes) of a task's
// references to the calendars it lists.
func (k Keys) CalendarRefOps(rec *storev1.TaskRecord, names []string, del bool) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(names))
	for _, c := range names {
		key := k.CalendarTaskRef(c, rec.Spec.GetIdentity(), rec.Id)
		if del {
			ops = append(ops, clientv3.OpDelete(key))
		} else {
			ops = append(ops, clientv3.OpPut(key, ""))
		}
	}
	return ops
}
