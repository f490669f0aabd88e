package workers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Limits of a WorkerHello.
const (
	MaxWorkerName  = 128
	MaxKinds       = taskservice.MaxWorkerKinds
	MaxConcurrency = 10000
	// maxEcho bounds how much of a worker's own string (a run id, a
	// fence) a refusal quotes back: the outcome's data, message and snooze
	// are limited where the run's outcome is committed (taskservice).
	maxEcho = 128
)

// Service returns the pool's gRPC service, to register on the node's server.
func (p *Pool) Service() taskdv1.WorkerServiceServer { return &service{p: p} }

type service struct {
	taskdv1.UnimplementedWorkerServiceServer
	p *Pool
}

// errStopping refuses a stream while the pool closes.
var errStopping = status.Error(codes.Unavailable, "the node is stopping")

// Work serves one worker's stream: hello, then runs out and outcomes in,
// until the worker leaves, falls silent, stops reading, or the pool closes.
func (sv *service) Work(stream taskdv1.WorkerService_WorkServer) error {
	p := sv.p
	if n := p.streams.Add(1); n > int64(p.cfg.MaxStreams) {
		p.streams.Add(-1)
		return status.Errorf(codes.ResourceExhausted, "node %s serves %d Work streams, its limit (--max-worker-streams)", p.cfg.Node, p.cfg.MaxStreams)
	}
	defer p.streams.Add(-1)
	ctx := stream.Context()
	in := make(chan *taskdv1.WorkRequest)
	recvErr := make(chan error, 1)
	// The reader ends when the stream does, which Work's return brings about.
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case in <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	silence := 3 * p.cfg.Heartbeat
	timer := time.NewTimer(silence)
	defer timer.Stop()

	var hello *taskdv1.WorkerHello
	select {
	case m := <-in:
		hello = m.GetHello()
		if hello == nil {
			return status.Error(codes.InvalidArgument, "hello: the stream's first message must be a WorkerHello")
		}
	case err := <-recvErr:
		return err
	case <-timer.C:
		return status.Errorf(codes.DeadlineExceeded, "hello: none within %v", silence)
	case <-p.stopping:
		return errStopping
	case <-ctx.Done():
		return streamEnded(ctx)
	}
	if err := checkHello(hello); err != nil {
		return err
	}
	s := &session{
		name:        hello.GetWorker(),
		kinds:       hello.GetKinds(),
		concurrency: int(hello.GetConcurrency()),
		// Each run causes at most three messages (run, cancel, ack), and
		// the welcome goes first; full, the worker is cut off.
		out:  make(chan *taskdv1.WorkResponse, 3*int(hello.GetConcurrency())+16),
		gone: make(chan struct{}),
		end:  newStreamEnd(),
		runs: map[string]*dispatch{},
	}
	// The welcome is queued before the worker joins (and runs may be
	// queued behind it), and sent once it has: a worker that has its
	// welcome is one the node dispatches to.
	s.out <- &taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Welcome{Welcome: &taskdv1.WorkerWelcome{
		Node: p.cfg.Node, HeartbeatInterval: durationpb.New(p.cfg.Heartbeat)}}}
	if err := p.join(s); err != nil {
		return err
	}
	defer p.leave(s)
	snd := startSender(s, stream.Send)
	defer snd.stop()
	// A send may wait for the worker to read; the loop below never does,
	// and looks this often whether one has waited too long.
	stuck := time.NewTicker(max(p.cfg.Heartbeat/2, time.Millisecond))
	defer stuck.Stop()
	log := p.log.With("worker", s.name)
	log.Info("worker connected", "kinds", s.kinds, "concurrency", s.concurrency)
	for {
		select {
		case m := <-in:
			timer.Reset(silence)
			switch msg := m.GetMsg().(type) {
			case *taskdv1.WorkRequest_Outcome:
				p.report(s, msg.Outcome)
			case *taskdv1.WorkRequest_Heartbeat:
			default:
				return s.ending(status.Error(codes.InvalidArgument, "msg: after the hello, a worker sends outcomes and heartbeats only"))
			}
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				log.Info("worker disconnected")
				s.ending(errClosedByWorker)
				return nil
			}
			log.Info("worker stream broke", "error", err)
			return s.ending(err)
		case err := <-snd.failed:
			log.Info("worker stream ended", "error", err)
			return s.ending(err)
		case <-timer.C:
			p.cutOff(s, CutSilent, status.Errorf(codes.DeadlineExceeded, "worker cut off: no heartbeat for %v", silence))
		case <-stuck.C:
			if waited := snd.stuckFor(); waited >= silence {
				p.cutOff(s, CutNotReading, status.Errorf(codes.ResourceExhausted,
					"worker cut off: a message to it has waited %v for it to read its stream", waited.Round(time.Millisecond)))
			}
		case <-s.end.ch:
			return s.end.err
		case <-p.stopping:
			return s.ending(errStopping)
		case <-ctx.Done():
			// The worker went away, or its token was revoked (the
			// interceptor ends the stream with UNAUTHENTICATED): no run is
			// sent after this, and those in flight end as by a disconnection.
			log.Info("worker stream ended", "error", context.Cause(ctx))
			return s.ending(streamEnded(ctx))
		}
	}
}

// streamEnded is the status of a stream whose context ended.
func streamEnded(ctx context.Context) error {
	if st, ok := status.FromError(context.Cause(ctx)); ok && st.Code() != codes.Unknown {
		return st.Err()
	}
	return status.FromContextError(ctx.Err()).Err()
}

// ending records err as why s's stream ends, unless a cut-off came first,
// and returns what the stream ends with: the first reason.
func (s *session) ending(err error) error {
	s.end.set(err)
	s.end.mu.Lock()
	defer s.end.mu.Unlock()
	return s.end.err
}

// report takes a worker's outcome: it goes to the run's waiting call if the
// node still holds the run under that fence; otherwise it is refused.
func (p *Pool) report(s *session, o *taskdv1.WorkOutcome) {
	refuse := func(reason string) {
		p.trySend(s, &taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Ack{Ack: &taskdv1.WorkAck{RunId: o.GetRunId(), Reason: reason}}})
	}
	if _, ok := taskdv1.WorkResult_name[int32(o.GetResult())]; !ok || o.GetResult() == taskdv1.WorkResult_WORK_RESULT_UNSPECIFIED {
		refuse(fmt.Sprintf("outcome.result: %d is not a result; the run stays held", o.GetResult()))
		return
	}
	p.mu.Lock()
	d := s.runs[o.GetRunId()]
	switch {
	case d == nil:
		p.mu.Unlock()
		refuse(fmt.Sprintf("run %.*q is not held by node %s on this stream: it timed out, was cancelled, or its identity moved away", maxEcho, o.GetRunId(), p.cfg.Node))
		return
	case d.fence != o.GetFence():
		p.mu.Unlock()
		refuse(fmt.Sprintf("outcome.fence: %.*q is not the run's fence %q; the run stays held", maxEcho, o.GetFence(), d.fence))
		return
	}
	delete(s.runs, d.id)
	s.inflight--
	d.reported = reportedOutcome(o.GetResult())
	p.awaiting[d.key] = d
	p.wakeLocked()
	p.mu.Unlock()
	d.result <- o
}

func checkHello(h *taskdv1.WorkerHello) error {
	bad := func(field, format string, args ...any) error {
		return status.Errorf(codes.InvalidArgument, "hello.%s: %s", field, fmt.Sprintf(format, args...))
	}
	if h.GetWorker() == "" || len(h.GetWorker()) > MaxWorkerName || !utf8.ValidString(h.GetWorker()) {
		return bad("worker", "%.*q must be 1-%d bytes of UTF-8", maxEcho, h.GetWorker(), MaxWorkerName)
	}
	if n := len(h.GetKinds()); n == 0 || n > MaxKinds {
		return bad("kinds", "%d kinds; a worker serves 1-%d", n, MaxKinds)
	}
	for i, k := range h.GetKinds() {
		if err := taskservice.ValidateKind(fmt.Sprintf("hello.kinds[%d]", i), k); err != nil {
			return grpcapi.Status(err)
		}
	}
	if c := h.GetConcurrency(); c < 1 || c > MaxConcurrency {
		return bad("concurrency", "%d; it must be 1-%d", c, MaxConcurrency)
	}
	return nil
}
