package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/backoff"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Job is one run of a task as a Worker's handler sees it.
type Job struct {
	// RunID names the run on its node's stream.
	RunID     string
	Identity  string
	TaskID    string
	Kind      string
	Payload   []byte
	Data      []byte // the task's persistent data before this run
	Labels    map[string]string
	RunNumber int64
	Attempt   int32
	FireTime  time.Time // zero for a manual run
	// Fence is "<epoch>.<revision>": give it to downstream systems, which
	// keep the highest they have seen and refuse a stale duplicate.
	Fence string
	// Deadline is when the node gives up on the run; the handler's context
	// ends then.
	Deadline time.Time
	Manual   bool
	Recovery bool
	// Node that dispatched the run.
	Node string

	data    []byte
	dataSet bool
	message string
}

// SetData replaces the task's persistent data when the run's outcome is
// committed.
func (j *Job) SetData(b []byte) { j.data, j.dataSet = append([]byte(nil), b...), true }

// SetMessage sets the message kept in the run's history.
func (j *Job) SetMessage(s string) { j.message = s }

// WorkFunc runs one job. Its return decides the outcome: nil is SUCCESS;
// Warning, Permanent, Snooze and CancelTask ask for theirs; any other error
// is ERROR, retried after the task's backoff.
type WorkFunc func(ctx context.Context, job *Job) error

// jobOutcome is an outcome a WorkFunc asks for by its error.
type jobOutcome struct {
	result taskdv1.WorkResult
	msg    string
	until  time.Time
}

func (o *jobOutcome) Error() string { return o.msg }

// Warning: the run succeeded, with msg worth a look.
func Warning(msg string) error {
	return &jobOutcome{result: taskdv1.WorkResult_WORK_RESULT_WARNING, msg: msg}
}

// Permanent: the run failed and is not retried; the task goes on with its
// next fire time, or, with none left, is DEAD.
func Permanent(err error) error {
	return &jobOutcome{result: taskdv1.WorkResult_WORK_RESULT_PERMANENT, msg: err.Error()}
}

// Snooze: the same fire time runs again at until, with no attempt used up.
func Snooze(until time.Time) error {
	return &jobOutcome{result: taskdv1.WorkResult_WORK_RESULT_SNOOZE, msg: "snoozed until " + until.UTC().Format(time.RFC3339), until: until}
}

// CancelTask: the task is cancelled; it has no more runs.
func CancelTask(reason string) error {
	return &jobOutcome{result: taskdv1.WorkResult_WORK_RESULT_CANCEL, msg: reason}
}

// Ack is a node's answer to an outcome a Worker reported.
type Ack struct {
	Node  string
	RunID string
	// Accepted is true when the node committed the outcome as reported;
	// false when it refused it (the run timed out or was cancelled, or the
	// node lost the identity, so another run of it may happen elsewhere)
	// or recorded another outcome (a success that came after the run's
	// deadline is recorded as a timeout error, and retried); Reason says
	// which.
	Accepted bool
	Reason   string
}

// WorkerOptions set up a Worker.
type WorkerOptions struct {
	// Name of the worker in the nodes' logs (default: host name and pid).
	Name string
	// Concurrency is the most jobs the worker runs at once for each node
	// (default 10).
	Concurrency int
	// Discover is how often the node list is read again to follow joins
	// and leaves (default 2 s).
	Discover time.Duration
	// OnAck, if set, is told each node's answer to an outcome.
	OnAck func(Ack)
	// Logger (default: none).
	Logger hclog.Logger
}

// Worker serves kinds with Go functions for a whole cluster: it opens a
// Work stream to every node (found through Nodes, following joins and
// leaves), so whichever node owns an identity can hand it that identity's
// runs. Register the kinds with Handle, then call Run.
type Worker struct {
	c         *Client
	o         WorkerOptions
	log       hclog.Logger
	handlers  map[string]WorkFunc
	ready     chan struct{}
	readyOnce sync.Once
}

// Ready is closed once the worker serves its first node. That node
// accepts the worker's kinds at once; the other nodes learn them from its
// registration within about a second.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// NewWorker returns a worker of the cluster c talks to.
func (c *Client) NewWorker(o WorkerOptions) *Worker {
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.Discover == 0 {
		o.Discover = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Worker{c: c, o: o, log: o.Logger.Named("worker").With("worker", o.Name), handlers: map[string]WorkFunc{}, ready: make(chan struct{})}
}

// Handle serves kind with fn. Call it before Run.
func (w *Worker) Handle(kind string, fn WorkFunc) { w.handlers[kind] = fn }

// Run serves until ctx ends, then returns nil once every stream and job has
// ended (a job's context ends with ctx). It returns an error at once for a
// worker with no kinds or a bad option.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.handlers) == 0 {
		return invalid("Worker.Run", "Handle", "no kinds registered")
	}
	if w.o.Concurrency < 1 {
		return invalid("Worker.Run", "WorkerOptions.Concurrency", "%d is below 1", w.o.Concurrency)
	}
	if w.o.Discover < 0 {
		return invalid("Worker.Run", "WorkerOptions.Discover", "%v is negative", w.o.Discover)
	}
	type conn struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	conns := map[string]*conn{} // by node address
	// A node missing from the list keeps its stream for a while: its
	// registration may lapse and come back (a node that lost its lease
	// registers again), and a stream cut then would lose the runs in
	// flight on it. A node that is really gone ends the stream itself.
	lastSeen := map[string]time.Time{}
	grace := max(10*w.o.Discover, 10*time.Second)
	defer func() {
		for _, c := range conns {
			c.cancel()
			<-c.done
		}
	}()
	tick := time.NewTicker(w.o.Discover)
	defer tick.Stop()
	for {
		nodes, err := w.c.Nodes(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("cannot list the nodes; keeping the streams open", "error", err)
		}
		if err == nil {
			live := map[string]bool{}
			for _, n := range nodes {
				if n.State != "STOPPED" && n.Address != "" {
					live[n.Address] = true
					lastSeen[n.Address] = time.Now()
				}
			}
			for addr := range live {
				if conns[addr] == nil {
					cctx, cancel := context.WithCancel(ctx)
					c := &conn{cancel: cancel, done: make(chan struct{})}
					conns[addr] = c
					go func() {
						defer close(c.done)
						w.serveNode(cctx, addr)
					}()
				}
			}
			for addr, c := range maps.All(conns) {
				if !live[addr] && time.Since(lastSeen[addr]) > grace {
					c.cancel()
					<-c.done
					delete(conns, addr)
					delete(lastSeen, addr)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// serveNode keeps a Work stream open to the node at addr until ctx ends.
func (w *Worker) serveNode(ctx context.Context, addr string) {
	b := backoff.New(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		start := time.Now()
		err := w.session(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		w.log.Info("stream to node ended; reconnecting", "address", addr, "error", err)
		if time.Since(start) > 10*time.Second {
			b.Reset()
		}
		if !b.Wait(ctx) {
			return
		}
	}
}

// session is one Work stream: hello, then jobs in and outcomes out.
func (w *Worker) session(ctx context.Context, addr string) error {
	cc, err := grpc.NewClient(addr, w.c.dial...)
	if err != nil {
		return err
	}
	defer cc.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := taskdv1.NewWorkerServiceClient(cc).Work(sctx)
	if err != nil {
		return err
	}
	kinds := make([]string, 0, len(w.handlers))
	for k := range w.handlers {
		kinds = append(kinds, k)
	}
	if err := stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: &taskdv1.WorkerHello{
		Worker: w.o.Name, Kinds: kinds, Concurrency: int32(w.o.Concurrency)}}}); err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	welcome := first.GetWelcome()
	if welcome == nil {
		return errors.New("the node's first message is not a welcome")
	}
	node := welcome.GetNode()
	heartbeat := welcome.GetHeartbeatInterval().AsDuration()
	if heartbeat <= 0 {
		heartbeat = time.Second
	}
	log := w.log.With("node", node)
	log.Info("serving node", "kinds", kinds, "concurrency", w.o.Concurrency)
	w.readyOnce.Do(func() { close(w.ready) })

	out := make(chan *taskdv1.WorkRequest, w.o.Concurrency+1)
	var wg sync.WaitGroup
	defer wg.Wait() // jobs and the sender end with sctx
	defer cancel()
	wg.Add(1)
	go func() { // the only goroutine that sends on the stream
		defer wg.Done()
		beat := time.NewTicker(heartbeat / 2)
		defer beat.Stop()
		for {
			var m *taskdv1.WorkRequest
			select {
			case <-sctx.Done():
				return
			case m = <-out:
			case <-beat.C:
				m = &taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Heartbeat{Heartbeat: &taskdv1.WorkerHeartbeat{}}}
			}
			if err := stream.Send(m); err != nil {
				cancel()
				return
			}
		}
	}()
	var mu sync.Mutex
	jobs := map[string]context.CancelFunc{}
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		switch msg := m.GetMsg().(type) {
		case *taskdv1.WorkResponse_Run:
			job := jobOf(msg.Run)
			jctx, jcancel := context.WithCancel(sctx)
			if !job.Deadline.IsZero() {
				jcancel() // replaced by one with the run's deadline
				jctx, jcancel = context.WithDeadline(sctx, job.Deadline)
			}
			mu.Lock()
			jobs[job.RunID] = jcancel
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := w.run(jctx, job)
				mu.Lock()
				delete(jobs, job.RunID)
				mu.Unlock()
				jcancel()
				select {
				case out <- o:
				case <-sctx.Done(): // the stream is gone: the node retries the run
				}
			}()
		case *taskdv1.WorkResponse_Cancel:
			mu.Lock()
			if c := jobs[msg.Cancel.GetRunId()]; c != nil {
				c()
			}
			mu.Unlock()
			log.Info("node cancelled a job", "run", msg.Cancel.GetRunId(), "reason", msg.Cancel.GetReason())
		case *taskdv1.WorkResponse_Ack:
			a := Ack{Node: node, RunID: msg.Ack.GetRunId(), Accepted: msg.Ack.GetAccepted(), Reason: msg.Ack.GetReason()}
			if !a.Accepted {
				log.Warn("outcome refused: the run was dropped", "run", a.RunID, "reason", a.Reason)
			}
			if w.o.OnAck != nil {
				w.o.OnAck(a)
			}
		}
	}
}

// run calls the kind's function and turns its return into an outcome.
func (w *Worker) run(ctx context.Context, job *Job) (req *taskdv1.WorkRequest) {
	o := &taskdv1.WorkOutcome{RunId: job.RunID, Fence: job.Fence}
	req = &taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Outcome{Outcome: o}}
	fn := w.handlers[job.Kind]
	if fn == nil {
		o.Result, o.Message = taskdv1.WorkResult_WORK_RESULT_ERROR, fmt.Sprintf("worker %s has no function for kind %q", w.o.Name, job.Kind)
		return req
	}
	defer func() {
		if r := recover(); r != nil {
			o.Result, o.Message = taskdv1.WorkResult_WORK_RESULT_ERROR, fmt.Sprintf("job panicked: %v", r)
		}
	}()
	err := fn(ctx, job)
	o.Data, o.DataSet, o.Message = job.data, job.dataSet, job.message
	var jo *jobOutcome
	switch {
	case err == nil:
		o.Result = taskdv1.WorkResult_WORK_RESULT_SUCCESS
	case errors.As(err, &jo):
		o.Result = jo.result
		if o.Message == "" {
			o.Message = jo.msg
		}
		if !jo.until.IsZero() {
			o.SnoozeUntil = timestamppb.New(jo.until)
		}
	default:
		o.Result = taskdv1.WorkResult_WORK_RESULT_ERROR
		if o.Message == "" {
			o.Message = err.Error()
		}
	}
	return req
}

func jobOf(r *taskdv1.WorkRun) *Job {
	return &Job{
		RunID:     r.GetRunId(),
		Identity:  r.GetIdentity(),
		TaskID:    r.GetTaskId(),
		Kind:      r.GetKind(),
		Payload:   r.GetPayload(),
		Data:      r.GetData(),
		Labels:    r.GetLabels(),
		RunNumber: r.GetRunNumber(),
		Attempt:   r.GetAttempt(),
		FireTime:  timeOf(r.GetFireTime()),
		Fence:     r.GetFence(),
		Deadline:  timeOf(r.GetDeadline()),
		Manual:    r.GetManual(),
		Recovery:  r.GetRecovery(),
		Node:      r.GetNode(),
	}
}
