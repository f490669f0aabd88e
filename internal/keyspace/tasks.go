package keyspace

import (
	"fmt"
	"strings"
)

// The keys of the tasks: their records (of scope IDENTITY and EVERY_NODE),
// run history, forwarded results, idempotency keys, and the nodes' progress
// on and history of EVERY_NODE tasks.

// Task is the key of one task: task/<identity>/<task-id>
// (storev1.TaskRecord).
func (k Keys) Task(id, taskID string) string {
	return k.prefix + "task/" + Encode(id) + "/" + taskID
}

// Tasks is the prefix of all of an identity's tasks: task/<identity>/.
func (k Keys) Tasks(id string) string { return k.prefix + "task/" + Encode(id) + "/" }

// AllTasks is the prefix of every task of the cluster: task/.
func (k Keys) AllTasks() string { return k.prefix + "task/" }

// Runs is the prefix of one task's run history:
// runs/<identity>/<task-id>/.
func (k Keys) Runs(id, taskID string) string {
	return k.prefix + "runs/" + Encode(id) + "/" + taskID + "/"
}

// Run is the key of history entry seq of a task:
// runs/<identity>/<task-id>/<seq> (storev1.RunRecord), seq as 16 hex
// digits so that etcd's byte order is seq order.
func (k Keys) Run(id, taskID string, seq int64) string {
	return fmt.Sprintf("%s%016x", k.Runs(id, taskID), seq)
}

// Result is the key of a run result forwarded to the identity's new owner:
// result/<identity>/<task-id> (storev1.ForwardedResult). The old owner
// writes it while its run marker still stands on the task; the owner that
// settles the marker deletes it.
func (k Keys) Result(id, taskID string) string {
	return k.prefix + "result/" + Encode(id) + "/" + taskID
}

// Idem is the key of an idempotency key of an identity:
// idem/<identity>/<key> (the task id), the key escaped as identities are.
func (k Keys) Idem(id, key string) string {
	return k.prefix + "idem/" + Encode(id) + "/" + Encode(key)
}

// IdemPrefix is the prefix of an identity's idempotency keys:
// idem/<identity>/.
func (k Keys) IdemPrefix(id string) string { return k.prefix + "idem/" + Encode(id) + "/" }

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
	id, err = Decode(enc)
	return id, taskID, err
}

// Every is the key of a task of scope EVERY_NODE, stored once and run by
// every node: every/<identity>/<task-id> (storev1.TaskRecord).
func (k Keys) Every(id, taskID string) string {
	return k.prefix + "every/" + Encode(id) + "/" + taskID
}

// EveryTasks is the prefix of an identity's EVERY_NODE tasks:
// every/<identity>/.
func (k Keys) EveryTasks(id string) string { return k.prefix + "every/" + Encode(id) + "/" }

// AllEvery is the prefix of every EVERY_NODE task of the cluster: every/.
func (k Keys) AllEvery() string { return k.prefix + "every/" }

// EveryProgress is the key of one node's progress on an EVERY_NODE task:
// everynode/<node>/<task-id> (storev1.EveryNodeProgress).
func (k Keys) EveryProgress(node, taskID string) string {
	return k.prefix + "everynode/" + node + "/" + taskID
}

// EveryProgressOf is the prefix of one node's progress keys:
// everynode/<node>/.
func (k Keys) EveryProgressOf(node string) string { return k.prefix + "everynode/" + node + "/" }

// AllEveryProgress is the prefix of every node's progress on EVERY_NODE
// tasks, everynode/: AllEveryProgress() + node + "/" is
// EveryProgressOf(node).
func (k Keys) AllEveryProgress() string { return k.prefix + "everynode/" }

// EveryRuns is the prefix of an EVERY_NODE task's history, all nodes:
// everyruns/<task-id>/.
func (k Keys) EveryRuns(taskID string) string { return k.prefix + "everyruns/" + taskID + "/" }

// EveryRun is the key of history entry seq of node's runs of a task:
// everyruns/<task-id>/<node>/<seq> (storev1.RunRecord), seq as in Run.
func (k Keys) EveryRun(taskID, node string, seq int64) string {
	return fmt.Sprintf("%s%s/%016x", k.EveryRuns(taskID), node, seq)
}

// SplitEvery parses an EVERY_NODE task key into identity and task id.
func (k Keys) SplitEvery(key string) (id, taskID string, err error) {
	return k.split(key, "every/")
}
