//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// handlerEvent is one line of the handlers' shared log.
type handlerEvent struct {
	at                 time.Time
	start              bool // else end
	node, identity, id string
	run                int64
	attempt            int
	fence              string
	epoch, rev         int64 // the fence "epoch.revision"
	line               string
}

// runKey names one handler call: the same fields on its start and end line.
type runKey struct {
	id    string
	run   int64
	node  string
	fence string
}

func (e *handlerEvent) key() runKey { return runKey{e.id, e.run, e.node, e.fence} }

// parseHandlerLog reads the log written by handlerCommand; lines it cannot
// read are returned apart (a torn line would be a finding in itself).
func parseHandlerLog(data []byte) (events []*handlerEvent, bad []string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) != 8 || (f[1] != "start" && f[1] != "end") {
			bad = append(bad, line)
			continue
		}
		ns, err1 := strconv.ParseInt(f[0], 10, 64)
		run, err2 := strconv.ParseInt(f[5], 10, 64)
		attempt, err3 := strconv.Atoi(f[6])
		es, rs, ok := strings.Cut(f[7], ".")
		epoch, err4 := strconv.ParseInt(es, 10, 64)
		rev, err5 := strconv.ParseInt(rs, 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || !ok {
			bad = append(bad, line)
			continue
		}
		events = append(events, &handlerEvent{
			at: time.Unix(0, ns), start: f[1] == "start", node: f[2], identity: f[3], id: f[4],
			run: run, attempt: attempt, fence: f[7], epoch: epoch, rev: rev, line: line,
		})
	}
	return events, bad
}

// taskFacts is what the cluster says about one task once it settled.
type taskFacts struct {
	id, identity string
	ack          *ackedTask     // nil: the task ran but its schedule was never acknowledged
	task         *taskdv1.Task  // nil when notFound or err
	runs         []*taskdv1.Run // history, newest first
	notFound     bool
	err          error
}

// lifetime is one taskd process's life; end is zero if it still runs.
type lifetime struct {
	start, end time.Time
}

// checkInput is everything the checker reads.
type checkInput struct {
	events    []*handlerEvent
	badLines  []string
	tasks     map[string]*taskFacts
	lifetimes map[string][]lifetime // by node name
	pauses    []pausePastLease
	regEnds   []registrationEnd
}

// finding is one violation (or, for re-executions, one listed event), with
// the log lines or history entries that show it.
type finding struct {
	what     string
	evidence []string
}

// report is the checker's result. The must-be-zero lists are the
// violations; reexecutions and unended are listed, not failures.
type report struct {
	tasks, oneShots, periodic, unacked int
	starts, ends, committed            int
	regEnds                            int

	reexecutions []finding // a (task, run number) whose handler started more than once
	unended      []finding // a handler start with no end line, with the bound used for its end (see unendedBound)
	outlived     []finding // a handler that logged its end after its taskd process had exited

	lost           []finding // acknowledged, not cancelled, never succeeded
	unsettled      []finding // not in a final state by the settle deadline
	doubleCommits  []finding // two committed outcomes for one (task, run number)
	runNumberGaps  []finding // a run number with no committed outcome
	fireRepeats    []finding // one fire time succeeded twice
	periodicGaps   []finding // a periodic task short of its periods, or off its grid
	lateStarts     []finding // a start after a higher epoch of its identity had started (clock)
	fencedLate     []finding // a start written after its identity's epoch had changed (revisions)
	afterLapse     []finding // a start written after a pause past the lease, under an epoch from before it
	spawnedLate    []finding // listed: a handler begun after such a pause, its start written before it
	afterRegEnd    []finding // a start under an epoch from a registration of its node that had ended
	overlaps       []finding // two handler runs of one task overlapping in time
	phantoms       []finding // a committed run whose handler never started
	runNowLost     []finding // an acknowledged run-now never served
	cancelLost     []finding // an acknowledged cancel that did not stick
	badLines       []finding // unreadable log lines
	readErrors     []finding // tasks the checker could not read
	recoveryFailed []finding // processes that did not come back after a fault
}

// mustBeZero lists the violation kinds by name, in report order.
func (r *report) mustBeZero() []struct {
	name string
	list []finding
} {
	return []struct {
		name string
		list []finding
	}{
		{"lost acknowledged tasks", r.lost},
		{"unsettled tasks", r.unsettled},
		{"double commits", r.doubleCommits},
		{"run-number gaps", r.runNumberGaps},
		{"fire times run twice", r.fireRepeats},
		{"periodic gaps", r.periodicGaps},
		{"late starts (clock)", r.lateStarts},
		{"late starts (fence)", r.fencedLate},
		{"starts after a lapsed lease", r.afterLapse},
		{"starts under an ended registration", r.afterRegEnd},
		{"overlapping executions", r.overlaps},
		{"commits with no handler start", r.phantoms},
		{"run-now requests never served", r.runNowLost},
		{"cancels that did not stick", r.cancelLost},
		{"unreadable log lines", r.badLines},
		{"tasks not readable", r.readErrors},
		{"failed recoveries", r.recoveryFailed},
	}
}

// failed reports whether any must-be-zero figure is not zero.
func (r *report) failed() bool {
	for _, k := range r.mustBeZero() {
		if len(k.list) > 0 {
			return true
		}
	}
	return false
}

// committedOutcome reports whether a history entry is a run's committed
// outcome. INTERRUPTED (a run found cut off by a crash or stop) and DROPPED
// (a run whose commit failed its fence) record that the run did not commit;
// with recovery its run number runs again and commits later.
func committedOutcome(o taskdv1.Outcome) bool {
	switch o {
	case taskdv1.Outcome_OUTCOME_SUCCESS, taskdv1.Outcome_OUTCOME_WARNING,
		taskdv1.Outcome_OUTCOME_ERROR, taskdv1.Outcome_OUTCOME_CANCELED:
		return true
	}
	return false
}

func runString(r *taskdv1.Run) string {
	return fmt.Sprintf("run %d attempt %d %s node=%s fence=%s fire=%s started=%s manual=%t recovery=%t",
		r.GetRunNumber(), r.GetAttempt(), strings.TrimPrefix(r.GetOutcome().String(), "OUTCOME_"),
		r.GetNode(), r.GetFence(), r.GetFireTime().AsTime().Format("15:04:05.000"),
		r.GetStartedAt().AsTime().Format("15:04:05.000"), r.GetManual(), r.GetRecovery())
}

func taskLabel(f *taskFacts) string {
	shape := "unacknowledged"
	if f.ack != nil {
		shape = f.ack.shape
	}
	state := "?"
	if f.task != nil {
		state = strings.TrimPrefix(f.task.GetState().String(), "TASK_STATE_")
	}
	return fmt.Sprintf("task %s/%s (%s, %s)", f.identity, f.id, shape, state)
}

// cancelled reports whether the task ended cancelled; a cancel that was
// sent but never answered may have been applied, so only the final state
// says whether a task owes its runs.
func cancelled(f *taskFacts) bool {
	return f.task != nil && f.task.GetState() == taskdv1.TaskState_TASK_STATE_CANCELED
}

// check runs every check. Definitions:
//
//   - committed entry: a history entry whose outcome is SUCCESS, WARNING,
//     ERROR or CANCELED (see committedOutcome).
//   - lost: a task acknowledged, that ended neither CANCELED nor readable,
//     or that has no committed SUCCESS of its scheduled (non-manual) fire
//     time. The handler always exits 0, so every scheduled fire time must
//     end in one SUCCESS.
//   - unsettled: a task that was not COMPLETED, CANCELED or DEAD by the
//     settle deadline (e.g. left RUNNING).
//   - double commit: two committed entries with the same run number.
//   - run-number gap: for a task that did not end CANCELED, a run number
//     in 1..run_count with no committed entry. Every start takes a new run
//     number; a recovery reuses the interrupted one, so each number must
//     end in exactly one commit. (A cancel clears a pending recovery, so
//     cancelled tasks are exempt.)
//   - fire time run twice: two SUCCESS entries, neither manual, for the
//     same fire time of one task (retries of a fire time share it, but only
//     the last attempt can succeed).
//   - periodic gap: a periodic task (count N, misfire FIRE_ALL) that did
//     not end CANCELED and whose SUCCESS non-manual fire times are not
//     exactly N times, one interval apart.
//   - late start (clock): a handler start of identity I under epoch E at
//     time t, when a handler start of I under an epoch E' > E was logged
//     before t, on any node: the node started a run for an identity that
//     had moved on. Each is tagged "start written before the move" when its
//     fence revision is below E' (its start Txn committed while it still
//     owned the identity, the handler began late) or "start written after
//     the move" otherwise.
//   - late start (fence): a handler start under fence E.R when some start of
//     the same identity shows an epoch E' with E < E' < R: the start Txn
//     committed at revision R, after the mapping had changed at revision
//     E', so its epoch compare cannot have held. Exact, clock-free.
//   - start after a lapsed lease: a taskd process paused (SIGSTOP) longer
//     than its lease; R1 and R2 are etcd's revisions read just before the
//     SIGSTOP and just before the SIGCONT. Its lease expired meanwhile, so
//     every identity it held then is no longer its own under the same
//     epoch: it may only run them again after re-registering, under new
//     epochs. A handler start on that node under fence E.R with E <= R1
//     (an epoch from before the pause) and R > R2 (start written after
//     the SIGCONT) is a violation. One with R <= R1 (start written before
//     the pause, handler called after it) is listed apart: no check the
//     node makes before its start write can close that window.
//   - start under an ended registration: a start on node X under fence
//     E.R when a registration of X ended (its record deleted, or replaced
//     under another lease by a new incarnation) at revision R0 with
//     E < R0 < R. When a registration ends, its identities keep their
//     epochs only until someone re-maps them; a node that registers again
//     re-adopts them under new epochs (> R0), and nothing can move an
//     identity to X while it is unregistered. So a start written after R0
//     under an epoch from before R0 was made on the strength of a lease
//     that was gone: the node kept running identities after its lease
//     lapsed. Exact, from a watch on the nodes' records.
//   - overlap: two handler runs of one task whose [start, end] intervals
//     intersect. A start with no end line ends at the earliest of: the exit
//     of the taskd process that ran it (its handler is killed with it), and
//     the ended_at of its own history entry (same run number, same node,
//     the exact fence of the start line): a cancelled run's command is
//     killed and reaped before its handler call returns. With neither (the
//     process still runs, no such entry) it never ends. The finding says
//     which bound was used.
//   - re-execution (listed, allowed): a (task, run number) whose handler
//     started more than once.
//   - commit with no handler start: a SUCCESS entry whose (task, run number,
//     node, fence) has no start line.
//   - run-now never served: for a task that did not end CANCELED, the last
//     acknowledged RunTaskNow was sent at S but no committed manual entry
//     started at or after S.
//   - cancel that did not stick: an acknowledged cancel, yet the task did
//     not end CANCELED.
func check(in checkInput) *report {
	r := &report{}
	for _, l := range in.badLines {
		r.badLines = append(r.badLines, finding{"unreadable handler log line", []string{l}})
	}
	byTask := map[string][]*handlerEvent{}
	byIdentity := map[string][]*handlerEvent{}
	for _, e := range in.events {
		if e.start {
			r.starts++
			byTask[e.id] = append(byTask[e.id], e)
			byIdentity[e.identity] = append(byIdentity[e.identity], e)
		} else {
			r.ends++
		}
	}
	checkHandlerRuns(r, in)
	checkLateStarts(r, byIdentity)
	checkPauses(r, in)
	checkRegistrations(r, in)
	r.regEnds = len(in.regEnds)

	ids := make([]string, 0, len(in.tasks))
	for id := range in.tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		checkTask(r, in.tasks[id], byTask[id])
	}
	return r
}
