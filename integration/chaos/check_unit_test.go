//go:build chaos

package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// t0 is the synthetic logs' origin.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// logLine makes one handler log line as handlerCommand writes it.
func logLine(ms int, ev, node, identity, id string, run int64, fence string) string {
	return fmt.Sprintf("%d %s %s %s %s %d 1 %s", at(ms).UnixNano(), ev, node, identity, id, run, fence)
}

func hrun(num int64, o taskdv1.Outcome, node, fence string, fireMs int, manual bool) *taskdv1.Run {
	return &taskdv1.Run{RunNumber: num, Outcome: o, Node: node, Fence: fence, Manual: manual,
		FireTime: timestamppb.New(at(fireMs)), StartedAt: timestamppb.New(at(fireMs))}
}

const (
	success     = taskdv1.Outcome_OUTCOME_SUCCESS
	interrupted = taskdv1.Outcome_OUTCOME_INTERRUPTED
	completed   = taskdv1.TaskState_TASK_STATE_COMPLETED
)

func oneShot(id string, state taskdv1.TaskState, runCount int64, runs ...*taskdv1.Run) *taskFacts {
	return &taskFacts{id: id, identity: "u", ack: &ackedTask{id: id, identity: "u", shape: shapeNow},
		task: &taskdv1.Task{Id: id, State: state, RunCount: runCount, Spec: &taskdv1.TaskSpec{
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}}},
		runs: runs}
}

// The checker finds each kind of violation in a synthetic log and history
// made to contain exactly that one, and nothing in a clean one.
func TestCheckerFindsEachViolation(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		tasks []*taskFacts
		want  func(r *report) []finding
	}{
		{"clean", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
			// An interrupted run recovered under a new epoch: a re-execution, allowed.
			logLine(200, "start", "n1", "u", "B", 1, "10.12"), logLine(300, "end", "n1", "u", "B", 1, "10.12"),
			logLine(400, "start", "n2", "u", "B", 1, "20.21"), logLine(500, "end", "n2", "u", "B", 1, "20.21"),
		}, []*taskFacts{
			oneShot("A", completed, 1, hrun(1, success, "n1", "10.11", 0, false)),
			oneShot("B", completed, 1, hrun(1, success, "n2", "20.21", 400, false), hrun(1, interrupted, "n1", "10.12", 200, false)),
		}, nil},
		{"lost", nil, []*taskFacts{oneShot("A", completed, 0)}, func(r *report) []finding { return r.lost }},
		{"lost: not found", nil, []*taskFacts{{id: "A", identity: "u", ack: &ackedTask{shape: shapeNow}, notFound: true}},
			func(r *report) []finding { return r.lost }},
		{"double commit", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
			logLine(200, "start", "n2", "u", "A", 1, "20.21"), logLine(300, "end", "n2", "u", "A", 1, "20.21"),
		}, []*taskFacts{oneShot("A", completed, 1, hrun(1, success, "n1", "10.11", 0, false), hrun(1, success, "n2", "20.21", 200, false))},
			func(r *report) []finding { return r.doubleCommits }},
		{"run-number gap", []string{
			logLine(0, "start", "n1", "u", "A", 2, "10.11"), logLine(100, "end", "n1", "u", "A", 2, "10.11"),
		}, []*taskFacts{oneShot("A", completed, 2, hrun(2, success, "n1", "10.11", 0, false))},
			func(r *report) []finding { return r.runNumberGaps }},
		{"unsettled", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
		}, []*taskFacts{oneShot("A", taskdv1.TaskState_TASK_STATE_RUNNING, 1, hrun(1, success, "n1", "10.11", 0, false))},
			func(r *report) []finding { return r.unsettled }},
		{"overlap on two nodes", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(50, "start", "n2", "u", "A", 1, "20.21"),
			logLine(100, "end", "n1", "u", "A", 1, "10.11"), logLine(150, "end", "n2", "u", "A", 1, "20.21"),
		}, []*taskFacts{oneShot("A", completed, 1, hrun(1, success, "n2", "20.21", 0, false), hrun(1, interrupted, "n1", "10.11", 0, false))},
			func(r *report) []finding { return r.overlaps }},
		{"late start by clock", []string{
			logLine(0, "start", "n2", "u", "A", 1, "20.21"), logLine(100, "end", "n2", "u", "A", 1, "20.21"),
			logLine(200, "start", "n1", "u", "B", 1, "10.15"), logLine(300, "end", "n1", "u", "B", 1, "10.15"),
		}, []*taskFacts{
			oneShot("A", completed, 1, hrun(1, success, "n2", "20.21", 0, false)),
			oneShot("B", completed, 1, hrun(1, success, "n1", "10.15", 200, false)),
		}, func(r *report) []finding { return r.lateStarts }},
		{"late start by fence", []string{
			// B's start was written at revision 25, after epoch 20 began; its
			// handler happened to log first.
			logLine(0, "start", "n1", "u", "B", 1, "10.25"), logLine(100, "end", "n1", "u", "B", 1, "10.25"),
			logLine(200, "start", "n2", "u", "A", 1, "20.21"), logLine(300, "end", "n2", "u", "A", 1, "20.21"),
		}, []*taskFacts{
			oneShot("A", completed, 1, hrun(1, success, "n2", "20.21", 200, false)),
			oneShot("B", completed, 1, hrun(1, success, "n1", "10.25", 0, false)),
		}, func(r *report) []finding { return r.fencedLate }},
		{"commit with no handler start", nil, []*taskFacts{oneShot("A", completed, 1, hrun(1, success, "n1", "10.11", 0, false))},
			func(r *report) []finding { return r.phantoms }},
		{"fire time run twice", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
			logLine(200, "start", "n1", "u", "A", 2, "10.13"), logLine(300, "end", "n1", "u", "A", 2, "10.13"),
		}, []*taskFacts{oneShot("A", completed, 2, hrun(2, success, "n1", "10.13", 0, false), hrun(1, success, "n1", "10.11", 0, false))},
			func(r *report) []finding { return r.fireRepeats }},
		{"run-now never served", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
			// A manual run, but one that started before the request was sent.
			logLine(200, "start", "n1", "u", "A", 2, "10.13"), logLine(300, "end", "n1", "u", "A", 2, "10.13"),
		}, []*taskFacts{func() *taskFacts {
			f := oneShot("A", completed, 2, hrun(2, success, "n1", "10.13", 200, true), hrun(1, success, "n1", "10.11", 0, false))
			f.ack.runNowAcked = []time.Time{at(150), at(250)}
			return f
		}()}, func(r *report) []finding { return r.runNowLost }},
		{"cancel did not stick", []string{
			logLine(0, "start", "n1", "u", "A", 1, "10.11"), logLine(100, "end", "n1", "u", "A", 1, "10.11"),
		}, []*taskFacts{func() *taskFacts {
			f := oneShot("A", completed, 1, hrun(1, success, "n1", "10.11", 0, false))
			f.ack.cancelAcked = []time.Time{at(50)}
			return f
		}()}, func(r *report) []finding { return r.cancelLost }},
		{"periodic gap", []string{
			logLine(0, "start", "n1", "u", "P", 1, "10.11"), logLine(100, "end", "n1", "u", "P", 1, "10.11"),
			logLine(2000, "start", "n1", "u", "P", 2, "10.13"), logLine(2100, "end", "n1", "u", "P", 2, "10.13"),
		}, []*taskFacts{{id: "P", identity: "u", ack: &ackedTask{shape: shapePeriodic, count: 3},
			task: &taskdv1.Task{Id: "P", State: completed, RunCount: 2, Spec: &taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{{
				Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Second), Count: 3}}}}}},
			runs: []*taskdv1.Run{hrun(2, success, "n1", "10.13", 2000, false), hrun(1, success, "n1", "10.11", 0, false)}}},
			func(r *report) []finding { return r.periodicGaps }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var data []byte
			for _, l := range c.lines {
				data = append(data, l+"\n"...)
			}
			events, bad := parseHandlerLog(data)
			if len(bad) > 0 {
				t.Fatalf("unreadable lines: %q", bad)
			}
			tasks := map[string]*taskFacts{}
			for _, f := range c.tasks {
				tasks[f.id] = f
			}
			r := check(checkInput{events: events, tasks: tasks, lifetimes: map[string][]lifetime{
				"n1": {{start: t0}}, "n2": {{start: t0}},
			}})
			var found []finding
			if c.want != nil {
				found = c.want(r)
			}
			if c.want != nil && len(found) != 1 {
				t.Errorf("want exactly one finding of this kind, got %d: %+v", len(found), found)
			}
			// Every other must-be-zero kind stays empty.
			total := 0
			for _, k := range r.mustBeZero() {
				total += len(k.list)
			}
			if total != len(found) {
				for _, k := range r.mustBeZero() {
					if len(k.list) > 0 {
						t.Errorf("%s: %+v", k.name, k.list)
					}
				}
			}
			if c.want == nil && len(r.reexecutions) != 1 {
				t.Errorf("clean case: want one listed re-execution, got %+v", r.reexecutions)
			}
		})
	}
}

// A start written after a pause past the lease under an epoch from before
// it is a violation; one written before the pause is only listed.
func TestCheckerStartAfterLapsedLease(t *testing.T) {
	lines := []string{
		logLine(3000, "start", "n1", "u", "A", 1, "10.60"), // written after the SIGCONT (revision 50)
		logLine(3100, "end", "n1", "u", "A", 1, "10.60"),
		logLine(3200, "start", "n1", "u", "B", 1, "10.30"), // written before the pause (revision 40)
		logLine(3300, "end", "n1", "u", "B", 1, "10.30"),
		logLine(3400, "start", "n1", "u", "C", 1, "70.71"), // under a new epoch: fine
		logLine(3500, "end", "n1", "u", "C", 1, "70.71"),
	}
	var data []byte
	for _, l := range lines {
		data = append(data, l+"\n"...)
	}
	events, _ := parseHandlerLog(data)
	r := check(checkInput{events: events, lifetimes: map[string][]lifetime{"n1": {{start: t0}}},
		pauses: []pausePastLease{{node: "n1", stopped: at(0), cont: at(2900), revStop: 40, revCon: 50}}})
	if len(r.afterLapse) != 1 || len(r.spawnedLate) != 1 {
		t.Fatalf("after lapse %+v, spawned late %+v; want one each", r.afterLapse, r.spawnedLate)
	}
}

// A start written after its node's registration ended, under an epoch from
// before the end, is a violation; starts under later epochs are not.
func TestCheckerStartUnderEndedRegistration(t *testing.T) {
	lines := []string{
		logLine(0, "start", "n1", "u", "A", 1, "10.60"), // registration ended at 50
		logLine(100, "end", "n1", "u", "A", 1, "10.60"),
		logLine(200, "start", "n1", "u", "B", 1, "10.40"), // written before the end
		logLine(300, "end", "n1", "u", "B", 1, "10.40"),
		logLine(400, "start", "n1", "u", "C", 1, "55.56"), // re-adopted under a new epoch
		logLine(500, "end", "n1", "u", "C", 1, "55.56"),
		logLine(600, "start", "n2", "u", "D", 1, "10.70"), // another node's registration is its own
		logLine(700, "end", "n2", "u", "D", 1, "10.70"),
	}
	var data []byte
	for _, l := range lines {
		data = append(data, l+"\n"...)
	}
	events, _ := parseHandlerLog(data)
	r := check(checkInput{events: events, lifetimes: map[string][]lifetime{"n1": {{start: t0}}, "n2": {{start: t0}}},
		regEnds: []registrationEnd{{node: "n1", rev: 50, how: "record deleted"}}})
	if len(r.afterRegEnd) != 1 || !strings.Contains(r.afterRegEnd[0].evidence[0], " A ") {
		t.Fatalf("starts under an ended registration: %+v; want A's only", r.afterRegEnd)
	}
}

// A handler still running when its taskd process was SIGKILLed and
// logging its end later is listed, and the re-execution on the restarted
// process is an overlap.
func TestCheckerHandlerOutlivesTaskd(t *testing.T) {
	lines := []string{
		logLine(0, "start", "n1", "u", "A", 1, "10.11"),
		logLine(80, "start", "n1", "u", "A", 1, "30.31"), // the restarted process's recovery
		logLine(150, "end", "n1", "u", "A", 1, "10.11"),
		logLine(200, "end", "n1", "u", "A", 1, "30.31"),
	}
	var data []byte
	for _, l := range lines {
		data = append(data, l+"\n"...)
	}
	events, _ := parseHandlerLog(data)
	r := check(checkInput{events: events, tasks: map[string]*taskFacts{
		"A": oneShot("A", completed, 1, hrun(1, success, "n1", "30.31", 80, false), hrun(1, interrupted, "n1", "10.11", 0, false)),
	}, lifetimes: map[string][]lifetime{"n1": {{start: t0, end: at(50)}, {start: at(60)}}}})
	if len(r.outlived) != 1 || len(r.overlaps) != 1 || len(r.reexecutions) != 1 {
		t.Fatalf("outlived %d, overlaps %d, re-executions %d; want 1 each", len(r.outlived), len(r.overlaps), len(r.reexecutions))
	}
}

// endedAt sets a history entry's ended_at.
func endedAt(run *taskdv1.Run, ms int) *taskdv1.Run {
	run.EndedAt = timestamppb.New(at(ms))
	return run
}

// A handler killed by its own node (lease lost, stop) writes no end line;
// the end of its own history entry (same run number, node and fence)
// bounds it, and nothing else does: an entry with another node or an empty
// fence, or none, leaves it bounded by its taskd process's exit.
func TestCheckerKilledHandlerBoundedByHistory(t *testing.T) {
	lines := []string{
		logLine(0, "start", "n1", "u", "A", 1, "10.11"),  // killed: no end line
		logLine(80, "start", "n1", "u", "A", 1, "20.21"), // the recovery on the same node
		logLine(150, "end", "n1", "u", "A", 1, "20.21"),
	}
	recovered := hrun(1, success, "n1", "20.21", 80, false)
	cases := []struct {
		name        string
		killed      *taskdv1.Run // its history entry, if any
		exit        int          // ms when n1's taskd process exited
		wantOverlap bool
		wantBound   string // in the unended finding and, if any, the overlap's evidence
	}{
		{"entry of this node and fence ended before the recovery", endedAt(hrun(1, interrupted, "n1", "10.11", 0, false), 60),
			1000, false, "bounded by the end of its history entry (INTERRUPTED, node n1, fence 10.11) at 00:00:00.060"},
		{"no entry", nil,
			1000, true, "bounded by its taskd process's exit at 00:00:01.000; the other bound: no history entry"},
		{"entry with an empty fence (resolved by another node)", endedAt(hrun(1, interrupted, "n1", "", 0, false), 60),
			1000, true, "no history entry of this node with this fence"},
		{"entry with this fence on another node", endedAt(hrun(1, interrupted, "n2", "10.11", 0, false), 60),
			1000, true, "no history entry of this node with this fence"},
		{"entry of another run number", endedAt(hrun(2, interrupted, "n1", "10.11", 0, false), 60),
			1000, true, "no history entry of this node with this fence"},
		{"entry ended after the recovery started", endedAt(hrun(1, interrupted, "n1", "10.11", 0, false), 100),
			1000, true, "bounded by the end of its history entry (INTERRUPTED, node n1, fence 10.11) at 00:00:00.100"},
		{"process exited before the entry ended", endedAt(hrun(1, interrupted, "n1", "10.11", 0, false), 100),
			70, false, "bounded by its taskd process's exit at 00:00:00.070; the other bound: its history entry ended later, at 00:00:00.100"},
		{"entry of a process that still runs", endedAt(hrun(1, interrupted, "n1", "10.11", 0, false), 60),
			0, false, "at 00:00:00.060; the other bound: its taskd process still runs: open-ended"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var data []byte
			for _, l := range lines {
				data = append(data, l+"\n"...)
			}
			events, bad := parseHandlerLog(data)
			if len(bad) > 0 {
				t.Fatalf("unreadable lines: %q", bad)
			}
			runs := []*taskdv1.Run{recovered}
			if c.killed != nil {
				runs = append(runs, c.killed)
			}
			lives := []lifetime{{start: t0}}
			if c.exit > 0 {
				// The recovery runs in the same process if it exited
				// after 80 ms, in the next one otherwise.
				lives = []lifetime{{start: t0, end: at(c.exit)}, {start: at(c.exit)}}
			}
			r := check(checkInput{events: events, tasks: map[string]*taskFacts{"A": oneShot("A", completed, 1, runs...)},
				lifetimes: map[string][]lifetime{"n1": lives, "n2": {{start: t0}}}})
			if len(r.unended) != 1 || !strings.Contains(r.unended[0].what, c.wantBound) {
				t.Errorf("unended %+v; want one with %q", r.unended, c.wantBound)
			}
			if got := len(r.overlaps) > 0; got != c.wantOverlap {
				t.Errorf("overlaps %+v; want an overlap: %t", r.overlaps, c.wantOverlap)
			}
			if c.wantOverlap && (len(r.overlaps) != 1 || !strings.Contains(strings.Join(r.overlaps[0].evidence, "\n"), c.wantBound)) {
				t.Errorf("overlaps %+v; want one whose evidence names the bound %q", r.overlaps, c.wantBound)
			}
			for _, k := range r.mustBeZero() {
				if k.name != "overlapping executions" && len(k.list) > 0 {
					t.Errorf("%s: %+v", k.name, k.list)
				}
			}
			if len(r.reexecutions) != 1 {
				t.Errorf("re-executions %+v; want one", r.reexecutions)
			}
		})
	}
}
