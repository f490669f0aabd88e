package workers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// DefaultHeartbeat is how often a worker must send a heartbeat by default.
const DefaultHeartbeat = 5 * time.Second

// DefaultMaxStreams is how many Work streams a node serves at once by
// default (--max-worker-streams).
const DefaultMaxStreams = 1024

// Config sets up a Pool.
type Config struct {
	// Node is the name of the node the pool belongs to (required).
	Node string
	// Heartbeat is how often workers must send a heartbeat; one that sends
	// nothing for three intervals is cut off. Default DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxStreams is how many Work streams the node serves at once; one
	// more is refused with RESOURCE_EXHAUSTED. Default DefaultMaxStreams.
	MaxStreams int
	// Logger; the node's name is added to every line.
	Logger hclog.Logger
}

// Pool is the remote workers connected to one node. Use it as the node's
// taskservice.Config.Remote, add Observe to the node's Listeners, and
// register Service() on the node's gRPC server. Close it before stopping
// the gRPC server: open streams end at once.
type Pool struct {
	cfg Config
	log hclog.Logger
	seq atomic.Uint64
	// streams counts the Work streams open, hello or not (MaxStreams).
	streams atomic.Int64
	cutOffs cutOffCounts

	mu       sync.Mutex
	sessions map[*session]struct{}
	// freed signals (cap 1, coalesced) whenever a worker joins or a slot
	// frees: the node hands the slot to a run waiting for one (Reserve).
	freed chan struct{}
	kinds []string
	// awaiting holds the runs whose outcome went to the node, until the
	// node's outcome event says whether it was committed.
	awaiting map[runKey]*dispatch
	closed   bool

	kindsChanged chan struct{} // cap 1: coalesced signals
	stopping     chan struct{} // closed by Close
}

// session is one worker's stream.
type session struct {
	name        string
	kinds       []string
	concurrency int
	// out carries the messages to the worker, in order; the session's
	// sender sends them (sender.go). Bounded: full, the worker is cut off.
	out chan *taskdv1.WorkResponse
	// gone is closed when the stream ends.
	gone chan struct{}
	// end is why the stream ends, set once: a cut-off sets it first.
	end streamEnd
	// Under Pool.mu: inflight counts the slots taken, by runs held and by
	// reservations not yet used.
	inflight int
	runs     map[string]*dispatch
}

// dispatch is one run handed to a worker.
type dispatch struct {
	id     string
	fence  string
	key    runKey
	s      *session
	result chan *taskdv1.WorkOutcome // cap 1
	// reported is the outcome the worker's result stands for, set once it
	// came (under Pool.mu): the ack says whether the node recorded it.
	reported taskdv1.Outcome
}

// runKey matches a run's outcome event to its dispatch.
type runKey struct {
	task  string
	run   int64
	fence string
}

// New returns an empty pool.
func New(cfg Config) (*Pool, error) {
	if cfg.Node == "" {
		return nil, errors.New("workers: Config.Node is required")
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Heartbeat < 0 {
		return nil, fmt.Errorf("workers: Config.Heartbeat is %v; it must be positive", cfg.Heartbeat)
	}
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxStreams < 0 {
		return nil, fmt.Errorf("workers: Config.MaxStreams is %d; it must be positive", cfg.MaxStreams)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Pool{
		cfg:          cfg,
		log:          cfg.Logger.Named("workers").With("node", cfg.Node),
		sessions:     map[*session]struct{}{},
		freed:        make(chan struct{}, 1),
		awaiting:     map[runKey]*dispatch{},
		kindsChanged: make(chan struct{}, 1),
		stopping:     make(chan struct{}),
	}, nil
}

// Kinds lists the kinds some connected worker serves, sorted.
func (p *Pool) Kinds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.kinds)
}

// KindsChanged signals each time Kinds may have changed.
func (p *Pool) KindsChanged() <-chan struct{} { return p.kindsChanged }

// Workers returns how many workers are connected.
func (p *Pool) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// Awaiting returns how many outcomes wait for the node's word on their
// commit: zero when the pool is idle.
func (p *Pool) Awaiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.awaiting)
}

// Close ends every worker's stream, and refuses new ones. Runs in flight on
// workers end as by a disconnection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.stopping)
	}
}

// Reserve takes a free slot of the least busy connected worker of kind,
// for a run the node is about to start: taskservice.Remote. The node calls
// it before the run takes a run slot or writes its start, so a run no
// worker can take yet waits on the node, holding nothing, until Freed.
func (p *Pool) Reserve(kind string) (taskservice.Reservation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false
	}
	s := p.pickLocked(kind)
	if s == nil {
		return nil, false
	}
	s.inflight++
	return &reservation{p: p, s: s, kind: kind}, true
}

// Freed signals each time a Reserve that failed may succeed now: a slot
// freed or a worker joined.
func (p *Pool) Freed() <-chan struct{} { return p.freed }

// reservation is one worker's slot held for a run about to start.
type reservation struct {
	p    *Pool
	s    *session
	kind string
	done bool // used or released; under Pool.mu
}

// Live reports whether the reserved worker is still connected.
func (r *reservation) Live() bool {
	select {
	case <-r.s.gone:
		return false
	default:
		return true
	}
}

// Release gives the slot back unused.
func (r *reservation) Release() {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	r.s.inflight--
	p.wakeLocked()
}

// take turns the reservation into the run's dispatch: on the reserved
// worker, or, if it has gone since, on another of the kind with a free
// slot; nil if there is none.
func (r *reservation) take(run *taskservice.Run) (*dispatch, error) {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.done {
		return nil, errors.New("workers: a reservation used twice")
	}
	r.done = true
	s := r.s
	select {
	case <-s.gone:
		s.inflight-- // its slot is gone with it
		if s = p.pickLocked(r.kind); s == nil {
			return nil, taskservice.Retry(fmt.Errorf("worker %s went away before the run was handed to it, and no other worker of kind %q has a free slot", r.s.name, r.kind))
		}
		s.inflight++
	default:
	}
	return p.holdLocked(s, run), nil
}

// Work runs one run on the reserved worker: taskservice.Reservation.
func (r *reservation) Work(ctx context.Context, run *taskservice.Run) error {
	p := r.p
	d, err := r.take(run)
	if err != nil {
		return err
	}
	msg := &taskdv1.WorkRun{
		RunId:     d.id,
		Identity:  run.Identity,
		TaskId:    run.TaskID,
		Kind:      run.Kind,
		Payload:   run.Payload,
		Data:      run.Data,
		Labels:    run.Labels,
		RunNumber: run.RunNumber,
		Attempt:   int32(run.Attempt),
		Fence:     d.fence,
		Manual:    run.Manual,
		Recovery:  run.Recovery,
		Node:      p.cfg.Node,
	}
	if !run.FireTime.IsZero() {
		msg.FireTime = timestamppb.New(run.FireTime)
	}
	if dl, ok := ctx.Deadline(); ok {
		msg.Deadline = timestamppb.New(dl)
	}
	// Never waits: a worker whose queue is full is cut off, and the run
	// ends below as by its going away.
	p.trySend(d.s, &taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Run{Run: msg}})
	select {
	case o := <-d.result:
		return outcome(run, o)
	case <-d.s.gone:
		if o, ok := p.giveUp(d); !ok {
			return outcome(run, o)
		}
		return taskservice.Retry(fmt.Errorf("worker %s went away during the run: %s", d.s.name, d.s.end.why()))
	case <-ctx.Done():
		if o, ok := p.giveUp(d); !ok {
			return outcome(run, o) // it came in the meantime
		}
		reason := context.Cause(ctx).Error()
		p.trySend(d.s, &taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Cancel{Cancel: &taskdv1.WorkCancel{RunId: d.id, Reason: reason}}})
		return fmt.Errorf("worker %s: %w", d.s.name, ctx.Err())
	}
}

// pickLocked returns the least busy worker of kind with a free slot.
func (p *Pool) pickLocked(kind string) *session {
	var best *session
	for s := range p.sessions {
		if s.inflight < s.concurrency && !s.end.ended() && slices.Contains(s.kinds, kind) && (best == nil || s.inflight < best.inflight) {
			best = s
		}
	}
	return best
}

// holdLocked registers run as held by s, in the slot reserved for it.
func (p *Pool) holdLocked(s *session, run *taskservice.Run) *dispatch {
	fence := run.Fence.String()
	d := &dispatch{
		id:     p.cfg.Node + "-" + strconv.FormatUint(p.seq.Add(1), 10),
		fence:  fence,
		key:    runKey{run.TaskID, run.RunNumber, fence},
		s:      s,
		result: make(chan *taskdv1.WorkOutcome, 1),
	}
	s.runs[d.id] = d
	return d
}

// giveUp takes d back from its worker; ok is false when its outcome came
// first (then that outcome is returned, and the node commits it or not).
func (p *Pool) giveUp(d *dispatch) (*taskdv1.WorkOutcome, bool) {
	p.mu.Lock()
	if _, held := d.s.runs[d.id]; held {
		delete(d.s.runs, d.id)
		d.s.inflight--
		p.wakeLocked()
		p.mu.Unlock()
		return nil, true
	}
	p.mu.Unlock()
	return <-d.result, false
}

// wakeLocked tells the node that a run waiting for a worker may have one
// now (Freed).
func (p *Pool) wakeLocked() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// outcome turns a worker's outcome into the handler's return.
func outcome(run *taskservice.Run, o *taskdv1.WorkOutcome) error {
	if o.GetDataSet() {
		run.SetData(o.GetData())
	}
	msg := o.GetMessage()
	switch o.GetResult() {
	case taskdv1.WorkResult_WORK_RESULT_SUCCESS:
		if msg != "" {
			run.SetMessage(msg)
		}
		return nil
	case taskdv1.WorkResult_WORK_RESULT_WARNING:
		return taskservice.Warning(msg)
	case taskdv1.WorkResult_WORK_RESULT_PERMANENT:
		return taskservice.Permanent(errors.New(orDefault(msg, "the worker reported a permanent error")))
	case taskdv1.WorkResult_WORK_RESULT_SNOOZE:
		var until time.Time
		if o.GetSnoozeUntil() != nil {
			until = o.GetSnoozeUntil().AsTime()
		}
		return taskservice.Snooze(until)
	case taskdv1.WorkResult_WORK_RESULT_CANCEL:
		return taskservice.Cancel(orDefault(msg, "cancelled by the worker"))
	default: // ERROR (an unspecified result is refused before it gets here)
		return taskservice.Retry(errors.New(orDefault(msg, "the worker reported an error")))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Observe is a taskservice.Listener: the outcome event of a run a worker
// reported says whether the node committed it as reported, which the
// worker is told (ack.go).
func (p *Pool) Observe(ev taskservice.Event) {
	switch ev.Type {
	case taskservice.EventSucceeded, taskservice.EventFailed, taskservice.EventDropped, taskservice.EventInterrupted:
	default:
		return
	}
	key := runKey{ev.TaskID, ev.RunNumber, ev.Fence.String()}
	p.mu.Lock()
	d := p.awaiting[key]
	delete(p.awaiting, key)
	p.mu.Unlock()
	if d == nil {
		return
	}
	// Listeners must not block: a worker whose queue is full is cut off.
	p.trySend(d.s, &taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Ack{Ack: ackOf(d, ev)}})
}

// join adds a worker. It refuses one when the pool is closed, and one
// whose kinds would take the node's distinct remote kinds past
// taskservice.MaxRemoteKinds (they go into the node's registration, which
// must always fit in one etcd request).
func (p *Pool) join(s *session) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errStopping
	}
	if n := p.kindsWithLocked(s.kinds); n > taskservice.MaxRemoteKinds {
		return status.Errorf(codes.ResourceExhausted,
			"hello.kinds: with this worker's kinds, node %s's workers would serve %d distinct kinds; the limit is %d",
			p.cfg.Node, n, taskservice.MaxRemoteKinds)
	}
	p.sessions[s] = struct{}{}
	p.kindsLocked()
	p.wakeLocked()
	return nil
}

// leave removes a worker: its runs in flight see gone and end as failed
// attempts; outcomes it reported that await their commit get no ack.
func (p *Pool) leave(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sessions, s)
	close(s.gone)
	for k, d := range p.awaiting {
		if d.s == s {
			delete(p.awaiting, k)
		}
	}
	p.kindsLocked()
}

// kindsWithLocked is how many distinct kinds the workers would serve with
// kinds added.
func (p *Pool) kindsWithLocked(kinds []string) int {
	n := len(p.kinds)
	var added []string
	for _, k := range kinds {
		if _, found := slices.BinarySearch(p.kinds, k); !found && !slices.Contains(added, k) {
			added = append(added, k)
			n++
		}
	}
	return n
}

// kindsLocked recomputes the kinds served, and signals a change.
func (p *Pool) kindsLocked() {
	set := map[string]bool{}
	for s := range p.sessions {
		for _, k := range s.kinds {
			set[k] = true
		}
	}
	kinds := make([]string, 0, len(set))
	for k := range set {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if slices.Equal(kinds, p.kinds) {
		return
	}
	p.kinds = kinds
	select {
	case p.kindsChanged <- struct{}{}:
	default:
	}
}
