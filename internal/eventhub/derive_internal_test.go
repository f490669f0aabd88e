package eventhub

import (
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const testPrefix = "/t/"

var at = timestamppb.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))

// write is the watched write of key from prev to cur (nil: absent) at
// revision rev.
func write(key string, prev, cur proto.Message, rev int64) *clientv3.Event {
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		return b
	}
	we := &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
	if cur != nil {
		we.Type, we.Kv.Value = clientv3.EventTypePut, enc(cur)
	}
	if prev != nil {
		we.PrevKv = &mvccpb.KeyValue{Key: []byte(key), Value: enc(prev)}
	}
	return we
}

// types lists the events' types.
func types(evs []*taskdv1.Event) []taskdv1.EventType {
	var out []taskdv1.EventType
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func sameTypes(t *testing.T, what string, evs []*taskdv1.Event, want ...taskdv1.EventType) {
	t.Helper()
	got := types(evs)
	if len(got) != len(want) {
		t.Fatalf("%s: events %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: events %v, want %v", what, got, want)
		}
	}
}

// TestDeriveTaskWrites: a task record's writes say the steps of its life,
// named by the key's identity and task id and the spec's kind.
func TestDeriveTaskWrites(t *testing.T) {
	d := New(Config{Prefix: testPrefix}).newDeriver()
	key := keyspace.New(testPrefix).Task("alice", "t1")
	spec := &taskdv1.TaskSpec{Identity: "alice", Kind: "mail"}
	stored := &storev1.TaskRecord{Id: "t1", Spec: spec, State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: at}
	evs := d.derive(write(key, nil, stored, 5))
	sameTypes(t, "stored", evs, taskdv1.EventType_EVENT_TYPE_SCHEDULED)
	if e := evs[0]; e.Identity != "alice" || e.TaskId != "t1" || e.Kind != "mail" || !proto.Equal(e.Time, at) {
		t.Fatalf("SCHEDULED names %s/%s kind %s at %v", e.Identity, e.TaskId, e.Kind, e.Time)
	}
	started := proto.Clone(stored).(*storev1.TaskRecord)
	started.Running = &storev1.RunMarker{RunNumber: 1, Node: "n1", StartedAt: at, FireTime: at, Epoch: 7, Attempt: 1}
	evs = d.derive(write(key, stored, started, 9))
	sameTypes(t, "started", evs, taskdv1.EventType_EVENT_TYPE_FIRED, taskdv1.EventType_EVENT_TYPE_STARTED)
	if e := evs[1]; e.Fence != "7.9" || e.Node != "n1" || e.RunNumber != 1 || !proto.Equal(e.FireTime, at) {
		t.Fatalf("STARTED: fence %s node %s run %d fire time %v", e.Fence, e.Node, e.RunNumber, e.FireTime)
	}
	if evs := d.derive(write(key, started, nil, 10)); len(evs) != 0 {
		t.Fatalf("a removed record made events %v", types(evs))
	}
}

// TestDeriveEveryNodeProgress: a node's progress on an EVERY_NODE task
// names the task's identity and kind, known from the task's record
// (noted as it was written), and the node of its key; its fence's epoch
// is 0.
func TestDeriveEveryNodeProgress(t *testing.T) {
	d := New(Config{Prefix: testPrefix}).newDeriver()
	keys := keyspace.New(testPrefix)
	task := &storev1.TaskRecord{Id: "e1", Spec: &taskdv1.TaskSpec{Identity: "bob", Kind: "sweep"}, State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: at}
	sameTypes(t, "stored", d.derive(write(keys.Every("bob", "e1"), nil, task, 3)), taskdv1.EventType_EVENT_TYPE_SCHEDULED)
	prog := &storev1.EveryNodeProgress{Running: &storev1.RunMarker{RunNumber: 2, Node: "n2", StartedAt: at, Epoch: 7}}
	evs := d.derive(write(keys.EveryProgress("n2", "e1"), nil, prog, 8))
	sameTypes(t, "progress", evs, taskdv1.EventType_EVENT_TYPE_FIRED, taskdv1.EventType_EVENT_TYPE_STARTED)
	if e := evs[0]; e.Identity != "bob" || e.Kind != "sweep" || e.Node != "n2" || e.Fence != "0.8" {
		t.Fatalf("FIRED names %s kind %s node %s fence %s", e.Identity, e.Kind, e.Node, e.Fence)
	}

	// note, which the Hub uses while no stream listens, keeps the same.
	quiet := New(Config{Prefix: testPrefix}).newDeriver()
	quiet.note([]*clientv3.Event{write(keys.Every("bob", "e1"), nil, task, 3)})
	if who := quiet.every["e1"]; who.identity != "bob" || who.kind != "sweep" {
		t.Fatalf("note kept %v for the task", who)
	}
}

// TestDeriveOtherWrites: a mapping that changes node is MOVED, a node's
// pick-up of a handoff area HANDED_OFF, an identity or kind pause PAUSED
// and RESUMED; the rest is no event.
func TestDeriveOtherWrites(t *testing.T) {
	d := New(Config{Prefix: testPrefix}).newDeriver()
	keys := keyspace.New(testPrefix)
	mapKey := testPrefix + "map/" + keyspace.Encode("carol")
	evs := d.derive(write(mapKey, &storev1.Mapping{Node: "n1"}, &storev1.Mapping{Node: "n2"}, 4))
	sameTypes(t, "moved", evs, taskdv1.EventType_EVENT_TYPE_MOVED)
	if e := evs[0]; e.Identity != "carol" || e.Node != "n2" || e.Message != "from n1" {
		t.Fatalf("MOVED: %s to %s, %q", e.Identity, e.Node, e.Message)
	}
	sameTypes(t, "same node", d.derive(write(mapKey, &storev1.Mapping{Node: "n1"}, &storev1.Mapping{Node: "n1"}, 5)))
	sameTypes(t, "first mapping", d.derive(write(mapKey, nil, &storev1.Mapping{Node: "n1"}, 5)))

	handoff := testPrefix + "handoff/n2/x"
	evs = d.derive(write(handoff, &storev1.HandoffEntry{Identity: "carol", From: "n1", TaskId: "*"}, nil, 6))
	sameTypes(t, "handed off", evs, taskdv1.EventType_EVENT_TYPE_HANDED_OFF)
	if e := evs[0]; e.Identity != "carol" || e.Node != "n2" || e.Message != "from n1" {
		t.Fatalf("HANDED_OFF: %s to %s, %q", e.Identity, e.Node, e.Message)
	}
	sameTypes(t, "task-level entry", d.derive(write(handoff, &storev1.HandoffEntry{Identity: "carol", From: "n1", TaskId: "t1"}, nil, 6)))
	sameTypes(t, "entry written", d.derive(write(handoff, nil, &storev1.HandoffEntry{Identity: "carol", From: "n1", TaskId: "*"}, 6)))

	pause := &taskdv1.Pause{}
	evs = d.derive(write(keys.PauseKind("mail"), nil, pause, 7))
	sameTypes(t, "kind paused", evs, taskdv1.EventType_EVENT_TYPE_PAUSED)
	if evs[0].Kind != "mail" || evs[0].Identity != "" {
		t.Fatalf("PAUSED names identity %q kind %q", evs[0].Identity, evs[0].Kind)
	}
	sameTypes(t, "pause rewritten", d.derive(write(keys.PauseKind("mail"), pause, pause, 8)))
	evs = d.derive(write(keys.PauseIdentity("carol"), pause, nil, 9))
	sameTypes(t, "identity resumed", evs, taskdv1.EventType_EVENT_TYPE_RESUMED)
	if evs[0].Identity != "carol" {
		t.Fatalf("RESUMED names identity %q", evs[0].Identity)
	}
	sameTypes(t, "a run's history", d.derive(write(keys.Run("carol", "t1", 1), nil, &storev1.RunRecord{}, 10)))
}

// TestTaskEvents: the difference of two versions of a record says each
// step once, in the order of contract §8.
func TestTaskEvents(t *testing.T) {
	base := &taskdv1.Event{Identity: "i", TaskId: "t", Kind: "k"}
	later := timestamppb.New(at.AsTime().Add(time.Hour))
	scheduled := &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 1}
	ran := func(o taskdv1.Outcome) *taskdv1.RunSummary {
		return &taskdv1.RunSummary{RunNumber: 1, Node: "n1", Outcome: o, EndedAt: at}
	}
	for _, tc := range []struct {
		name      string
		prev, cur *runView
		want      []taskdv1.EventType
	}{
		{"removed", scheduled, nil, nil},
		{"rewritten unchanged", scheduled, scheduled, nil},
		{"a node's first progress", nil, &runView{}, nil},
		{"misfired", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 1, misfires: 3},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_MISFIRED}},
		{"succeeded, next", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 1,
			lastRun: ran(taskdv1.Outcome_OUTCOME_SUCCESS), triggers: []*storev1.TriggerState{{Next: later}, {Next: timestamppb.New(later.AsTime().Add(time.Hour))}}},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_SUCCEEDED, taskdv1.EventType_EVENT_TYPE_NEXT_SCHEDULED}},
		{"failed, retry", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_RETRYING, specVer: 1,
			lastRun: ran(taskdv1.Outcome_OUTCOME_ERROR), retryAt: later},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_FAILED, taskdv1.EventType_EVENT_TYPE_RETRYING}},
		{"failed, dead", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_DEAD, specVer: 1, lastRun: ran(taskdv1.Outcome_OUTCOME_ERROR)},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_FAILED, taskdv1.EventType_EVENT_TYPE_DEAD, taskdv1.EventType_EVENT_TYPE_FINALIZED}},
		{"vetoed, completed", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_COMPLETED, specVer: 1, lastRun: ran(taskdv1.Outcome_OUTCOME_VETOED)},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_VETOED, taskdv1.EventType_EVENT_TYPE_FINALIZED}},
		{"canceled", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_CANCELED, specVer: 1},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_CANCELED}},
		{"paused", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 1, pausedAt: at},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_PAUSED}},
		{"resumed", &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 1, pausedAt: at}, scheduled,
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_RESUMED}},
		{"updated", scheduled, &runView{state: taskdv1.TaskState_TASK_STATE_SCHEDULED, specVer: 2},
			[]taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_UPDATED}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := taskEvents(tc.prev, tc.cur, base, 9, false)
			sameTypes(t, tc.name, evs, tc.want...)
			for _, e := range evs {
				if e.Identity != "i" || e.TaskId != "t" || e.Kind != "k" {
					t.Fatalf("%s names %s/%s kind %s", e.Type, e.Identity, e.TaskId, e.Kind)
				}
			}
			switch tc.name {
			case "misfired":
				if evs[0].Count != 3 {
					t.Fatalf("MISFIRED counts %d", evs[0].Count)
				}
			case "succeeded, next", "failed, retry":
				if !proto.Equal(evs[1].Next, later) {
					t.Fatalf("%s: next %v, want the earliest, %v", evs[1].Type, evs[1].Next, later)
				}
			case "paused", "resumed":
				if evs[0].Message != "task" {
					t.Fatalf("%s: message %q", evs[0].Type, evs[0].Message)
				}
			}
		})
	}
}
