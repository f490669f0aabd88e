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

// checkHandlerRuns pairs start and end lines and finds overlaps and
// re-executions.
func checkHandlerRuns(r *report, in checkInput) {
	type interval struct {
		start *handlerEvent
		end   time.Time // zero: open
		endOf string
	}
	ends := map[runKey][]*handlerEvent{}
	for _, e := range in.events {
		if !e.start {
			ends[e.key()] = append(ends[e.key()], e)
		}
	}
	perTask := map[string][]interval{}
	perRun := map[string][]*handlerEvent{}
	for _, e := range in.events {
		if !e.start {
			continue
		}
		iv := interval{start: e}
		if q := ends[e.key()]; len(q) > 0 {
			iv.end, iv.endOf = q[0].at, q[0].line
			ends[e.key()] = q[1:]
			if l, ok := lifeAt(in.lifetimes[e.node], e.at); ok && !l.end.IsZero() && iv.end.After(l.end) {
				r.outlived = append(r.outlived, finding{
					fmt.Sprintf("handler on %s ended %s after its taskd process exited at %s",
						e.node, iv.end.Sub(l.end).Round(time.Millisecond), l.end.Format("15:04:05.000")),
					[]string{e.line, iv.endOf},
				})
			}
		} else {
			var runs []*taskdv1.Run
			if f := in.tasks[e.id]; f != nil {
				runs = f.runs
			}
			iv.end, iv.endOf = unendedBound(in.lifetimes[e.node], runs, e)
			r.unended = append(r.unended, finding{"handler start with no end line; " + iv.endOf, []string{e.line}})
		}
		perTask[e.id] = append(perTask[e.id], iv)
		rk := fmt.Sprintf("%s run %d", e.id, e.run)
		perRun[rk] = append(perRun[rk], e)
	}
	for _, ivs := range perTask {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].start.at.Before(ivs[j].start.at) })
		// Each interval is compared with the one that reaches furthest among
		// those before it: if any earlier run is still going, that one is.
		var reach *interval
		for i := range ivs {
			iv := &ivs[i]
			if reach != nil && (reach.end.IsZero() || iv.start.at.Before(reach.end)) {
				r.overlaps = append(r.overlaps, finding{
					fmt.Sprintf("task %s: a run started while another was still running (%s)",
						iv.start.id, overlapCause(in.lifetimes, reach.start, iv.start)),
					[]string{reach.start.line, reach.endOf, iv.start.line},
				})
			}
			if reach == nil || (!reach.end.IsZero() && (iv.end.IsZero() || iv.end.After(reach.end))) {
				reach = iv
			}
		}
	}
	keys := make([]string, 0, len(perRun))
	for k := range perRun {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if starts := perRun[k]; len(starts) > 1 {
			var lines []string
			for _, s := range starts {
				lines = append(lines, s.line)
			}
			r.reexecutions = append(r.reexecutions, finding{fmt.Sprintf("%s started %d times", k, len(starts)), lines})
		}
	}
}

// lifeAt returns the taskd process of a node that ran at t.
func lifeAt(lives []lifetime, t time.Time) (lifetime, bool) {
	for _, l := range lives {
		if !t.Before(l.start) && (l.end.IsZero() || !t.After(l.end)) {
			return l, true
		}
	}
	return lifetime{}, false
}

// overlapCause says what separates two overlapping runs, to help read the
// report: another node (and the epochs), or the same node across a taskd
// process that exited while the first handler ran on.
func overlapCause(lives map[string][]lifetime, first, second *handlerEvent) string {
	if first.node != second.node {
		return fmt.Sprintf("on %s under epoch %d, then on %s under epoch %d", first.node, first.epoch, second.node, second.epoch)
	}
	if l, ok := lifeAt(lives[first.node], first.at); ok && !l.end.IsZero() && l.end.Before(second.at) {
		return fmt.Sprintf("both on %s: the taskd process that started the first exited at %s, its handler ran on",
			first.node, l.end.Format("15:04:05.000"))
	}
	return fmt.Sprintf("both on %s, same taskd process, epochs %d and %d", first.node, first.epoch, second.epoch)
}

// processEnd bounds a handler that logged no end: it ended at the latest
// when the taskd process running at t exited.
func processEnd(lives []lifetime, t time.Time) (time.Time, string) {
	for _, l := range lives {
		if t.Before(l.start) || (!l.end.IsZero() && t.After(l.end)) {
			continue
		}
		if l.end.IsZero() {
			return time.Time{}, "its taskd process still runs: open-ended"
		}
		return l.end, "bounded by its taskd process's exit at " + l.end.Format("15:04:05.000")
	}
	return time.Time{}, "no taskd process of that node ran then: open-ended"
}

// unendedBound bounds a handler that logged no end line: it ended at the
// latest when the first of these happened, and the text says which one was
// used:
//   - the taskd process running at its start exited (the handler's process
//     group dies with it);
//   - the handler call returned, as the ended_at of its own history entry:
//     same run number, same node and the exact fence of its start line. A
//     node that cancels a run (lost lease, stop) kills the command's
//     process group and reaps it before the call returns, so such a run
//     writes no end line but its entry says when it was over. An entry
//     written by another node (which has an empty fence, or another node)
//     says nothing about when this handler ended and is never used.
func unendedBound(lives []lifetime, runs []*taskdv1.Run, e *handlerEvent) (time.Time, string) {
	end, why := processEnd(lives, e.at)
	var entry *taskdv1.Run
	for _, run := range runs {
		ts := run.GetEndedAt()
		if run.GetRunNumber() != e.run || run.GetNode() != e.node || run.GetFence() == "" || run.GetFence() != e.fence ||
			ts == nil || (ts.GetSeconds() == 0 && ts.GetNanos() == 0) {
			continue
		}
		if entry == nil || run.GetEndedAt().AsTime().Before(entry.GetEndedAt().AsTime()) {
			entry = run
		}
	}
	if entry == nil {
		return end, why + "; the other bound: no history entry of this node with this fence"
	}
	ended := entry.GetEndedAt().AsTime()
	if !end.IsZero() && !ended.Before(end) {
		return end, why + "; the other bound: its history entry ended later, at " + ended.Format("15:04:05.000")
	}
	return ended, fmt.Sprintf("bounded by the end of its history entry (%s, node %s, fence %s) at %s; the other bound: %s",
		strings.TrimPrefix(entry.GetOutcome().String(), "OUTCOME_"), entry.GetNode(), entry.GetFence(),
		ended.Format("15:04:05.000"), why)
}

// checkRegistrations finds starts under epochs that predate the end of a
// registration of their node, written after that end.
func checkRegistrations(r *report, in checkInput) {
	for _, e := range in.events {
		if !e.start {
			continue
		}
		for _, end := range in.regEnds {
			if end.node == e.node && e.epoch < end.rev && end.rev < e.rev {
				r.afterRegEnd = append(r.afterRegEnd, finding{
					fmt.Sprintf("%s: registration ended at revision %d (%s); start under epoch %d written at revision %d",
						e.node, end.rev, end.how, e.epoch, e.rev),
					[]string{e.line},
				})
				break
			}
		}
	}
}

// checkPauses finds starts made on the strength of a lease that lapsed
// while the node was paused.
func checkPauses(r *report, in checkInput) {
	for _, e := range in.events {
		if !e.start {
			continue
		}
		for _, p := range in.pauses {
			if p.node != e.node || !e.at.After(p.cont) || e.epoch > p.revStop {
				continue
			}
			what := fmt.Sprintf("%s paused %s-%s (revisions %d-%d): start under epoch %d",
				p.node, p.stopped.Format("15:04:05.000"), p.cont.Format("15:04:05.000"), p.revStop, p.revCon, e.epoch)
			switch {
			case e.rev > p.revCon:
				r.afterLapse = append(r.afterLapse, finding{what + fmt.Sprintf(", written at revision %d after the SIGCONT", e.rev), []string{e.line}})
			case e.rev <= p.revStop:
				r.spawnedLate = append(r.spawnedLate, finding{what + fmt.Sprintf(", written at revision %d before the pause, handler called after it", e.rev), []string{e.line}})
			}
		}
	}
}

// checkLateStarts finds starts under an epoch older than one already seen
// for the identity, by clock and by fence revision.
func checkLateStarts(r *report, byIdentity map[string][]*handlerEvent) {
	ids := make([]string, 0, len(byIdentity))
	for id := range byIdentity {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		starts := byIdentity[id]
		sort.SliceStable(starts, func(i, j int) bool { return starts[i].at.Before(starts[j].at) })
		var newest *handlerEvent
		for _, s := range starts {
			if newest != nil && s.epoch < newest.epoch {
				tag := "start written after the move"
				if s.rev < newest.epoch {
					tag = "start written before the move, handler began late"
				}
				r.lateStarts = append(r.lateStarts, finding{
					fmt.Sprintf("identity %s: start under epoch %d on %s after a start under epoch %d on %s (%s)",
						id, s.epoch, s.node, newest.epoch, newest.node, tag),
					[]string{newest.line, s.line},
				})
			}
			if newest == nil || s.epoch > newest.epoch {
				newest = s
			}
		}
		// Fence check: the epochs of the identity, ascending.
		epochs := map[int64]*handlerEvent{}
		for _, s := range starts {
			if _, ok := epochs[s.epoch]; !ok {
				epochs[s.epoch] = s
			}
		}
		sorted := make([]int64, 0, len(epochs))
		for e := range epochs {
			sorted = append(sorted, e)
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for _, s := range starts {
			// The first epoch above s.epoch: if it is below s.rev the start
			// was written after the mapping changed.
			i := sort.Search(len(sorted), func(i int) bool { return sorted[i] > s.epoch })
			if i < len(sorted) && sorted[i] < s.rev {
				r.fencedLate = append(r.fencedLate, finding{
					fmt.Sprintf("identity %s: start under epoch %d written at revision %d, after epoch %d began at revision %d",
						id, s.epoch, s.rev, sorted[i], sorted[i]),
					[]string{epochs[sorted[i]].line, s.line},
				})
			}
		}
	}
}

// checkTask runs the per-task checks on its settled record and history.
func checkTask(r *report, f *taskFacts, starts []*handlerEvent) {
	r.tasks++
	if f.ack == nil {
		r.unacked++
	} else if f.ack.shape == shapePeriodic {
		r.periodic++
	} else {
		r.oneShots++
	}
	label := taskLabel(f)
	if f.err != nil {
		r.readErrors = append(r.readErrors, finding{label + ": " + f.err.Error(), nil})
		return
	}
	if f.notFound {
		if f.ack != nil {
			r.lost = append(r.lost, finding{label + ": acknowledged, but the task does not exist", nil})
		}
		return
	}
	var hist []string
	for _, run := range f.runs {
		hist = append(hist, runString(run))
	}
	state := f.task.GetState()
	switch state {
	case taskdv1.TaskState_TASK_STATE_COMPLETED, taskdv1.TaskState_TASK_STATE_CANCELED, taskdv1.TaskState_TASK_STATE_DEAD:
	default:
		r.unsettled = append(r.unsettled, finding{fmt.Sprintf("%s: still %s at the settle deadline", label, state), hist})
	}
	if f.ack != nil && len(f.ack.cancelAcked) > 0 && !cancelled(f) {
		r.cancelLost = append(r.cancelLost, finding{label + ": cancel acknowledged, task not CANCELED", hist})
	}

	// Committed entries by run number, SUCCESS fire times.
	committed := map[int64][]*taskdv1.Run{}
	fires := map[int64][]*taskdv1.Run{} // unix ns of fire time
	for _, run := range f.runs {
		if !committedOutcome(run.GetOutcome()) {
			continue
		}
		r.committed++
		committed[run.GetRunNumber()] = append(committed[run.GetRunNumber()], run)
		if run.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS && !run.GetManual() {
			ft := run.GetFireTime().AsTime().UnixNano()
			fires[ft] = append(fires[ft], run)
		}
		if run.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS && !startLogged(starts, run) {
			r.phantoms = append(r.phantoms, finding{label + ": SUCCESS with no handler start line", []string{runString(run)}})
		}
	}
	for num, runs := range committed {
		if len(runs) > 1 {
			var ev []string
			for _, run := range runs {
				ev = append(ev, runString(run))
			}
			r.doubleCommits = append(r.doubleCommits, finding{fmt.Sprintf("%s: run %d committed %d times", label, num, len(runs)), ev})
		}
	}
	for ft, runs := range fires {
		if len(runs) > 1 {
			var ev []string
			for _, run := range runs {
				ev = append(ev, runString(run))
			}
			r.fireRepeats = append(r.fireRepeats, finding{fmt.Sprintf("%s: fire time %s succeeded %d times",
				label, time.Unix(0, ft).Format("15:04:05.000"), len(runs)), ev})
		}
	}
	if cancelled(f) {
		return
	}
	for num := int64(1); num <= f.task.GetRunCount(); num++ {
		if len(committed[num]) == 0 {
			r.runNumberGaps = append(r.runNumberGaps, finding{fmt.Sprintf("%s: run %d of %d has no committed outcome",
				label, num, f.task.GetRunCount()), hist})
		}
	}
	if len(fires) == 0 && f.ack != nil {
		r.lost = append(r.lost, finding{label + ": acknowledged and not cancelled, but no scheduled run succeeded", hist})
	}
	if p := f.task.GetSpec().GetTriggers(); len(p) == 1 && p[0].GetPeriodic() != nil {
		checkPeriodic(r, label, p[0].GetPeriodic(), fires, hist)
	}
	if f.ack != nil && len(f.ack.runNowAcked) > 0 {
		last := f.ack.runNowAcked[len(f.ack.runNowAcked)-1]
		served := false
		for _, run := range f.runs {
			if run.GetManual() && committedOutcome(run.GetOutcome()) && !run.GetStartedAt().AsTime().Before(last) {
				served = true
			}
		}
		if !served {
			r.runNowLost = append(r.runNowLost, finding{fmt.Sprintf("%s: run-now acknowledged (sent %s), no manual run started after it",
				label, last.Format("15:04:05.000")), hist})
		}
	}
}

// checkPeriodic checks a settled periodic task's SUCCESS fire times: count
// of them, one interval apart.
func checkPeriodic(r *report, label string, p *taskdv1.PeriodicTrigger, fires map[int64][]*taskdv1.Run, hist []string) {
	times := make([]int64, 0, len(fires))
	for ft := range fires {
		times = append(times, ft)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	if p.GetCount() > 0 && int64(len(times)) != p.GetCount() {
		r.periodicGaps = append(r.periodicGaps, finding{fmt.Sprintf("%s: %d of %d periods succeeded", label, len(times), p.GetCount()), hist})
		return
	}
	step := p.GetInterval().AsDuration().Nanoseconds()
	for i := 1; i < len(times); i++ {
		if times[i]-times[i-1] != step {
			r.periodicGaps = append(r.periodicGaps, finding{fmt.Sprintf("%s: fire times %s and %s are not one interval apart",
				label, time.Unix(0, times[i-1]).Format("15:04:05.000"), time.Unix(0, times[i]).Format("15:04:05.000")), hist})
		}
	}
}

// startLogged reports whether a handler start line matches a history entry.
func startLogged(starts []*handlerEvent, run *taskdv1.Run) bool {
	for _, s := range starts {
		if s.run == run.GetRunNumber() && s.fence == run.GetFence() && s.node == run.GetNode() {
			return true
		}
	}
	return false
}
