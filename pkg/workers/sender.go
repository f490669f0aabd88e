package workers

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is how messages reach a worker without ever holding up the
// node: each session has a bounded queue (session.out) drained by a sender
// goroutine of its own, the only one that calls Send on the stream. A Send
// blocks while the worker's HTTP/2 flow-control window is full (it stopped
// reading); the stream's loop (service.go) keeps checking for silence
// meanwhile, and cuts the worker off when its queue is full or one send has
// waited as long as a silent worker is given.

// Why a worker was cut off: the reason label of the pool's counters
// (Stats.CutOff, the metric taskd_workers_cut_off_total).
const (
	// CutSilent: the worker sent nothing for three heartbeat intervals.
	CutSilent = "silent"
	// CutNotReading: one send to the worker waited three heartbeat
	// intervals for it to read.
	CutNotReading = "not_reading"
	// CutQueueFull: the worker's queue of messages was full.
	CutQueueFull = "queue_full"
)

// CutReasons lists the reasons a worker is cut off.
var CutReasons = []string{CutSilent, CutNotReading, CutQueueFull}

// Stats is what the pool holds now, and how many workers it cut off.
type Stats struct {
	// Workers is how many workers are connected (hello accepted).
	Workers int
	// Streams is how many Work streams are open, with or before a hello.
	Streams int
	// CutOff counts the workers cut off since the pool began, by reason.
	CutOff map[string]uint64
}

// cutOffCounts counts cut-offs by reason.
type cutOffCounts struct{ silent, notReading, queueFull atomic.Uint64 }

func (c *cutOffCounts) of(reason string) *atomic.Uint64 {
	switch reason {
	case CutSilent:
		return &c.silent
	case CutNotReading:
		return &c.notReading
	default:
		return &c.queueFull
	}
}

// Stats returns the pool's counts.
func (p *Pool) Stats() Stats {
	st := Stats{Workers: p.Workers(), Streams: int(p.streams.Load()), CutOff: map[string]uint64{}}
	for _, r := range CutReasons {
		st.CutOff[r] = p.cutOffs.of(r).Load()
	}
	return st
}

// streamEnd is why a session's stream ends, set once.
type streamEnd struct {
	mu  sync.Mutex
	ch  chan struct{} // closed when set
	err error
}

func newStreamEnd() streamEnd { return streamEnd{ch: make(chan struct{})} }

// set records err as the reason, unless one was recorded first.
func (e *streamEnd) set(err error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return false
	}
	e.err = err
	close(e.ch)
	return true
}

// ended reports whether the stream is ending: no more runs go to it.
func (e *streamEnd) ended() bool {
	select {
	case <-e.ch:
		return true
	default:
		return false
	}
}

// why says why the stream ended, for the message of its runs' failures.
func (e *streamEnd) why() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		return "its stream ended"
	}
	if st, ok := status.FromError(e.err); ok {
		return st.Message()
	}
	return e.err.Error()
}

// errClosedByWorker ends a stream the worker closed.
var errClosedByWorker = errors.New("the worker closed its stream")

// cutOff ends s's stream for reason with err (a status): the pool picks the
// worker no more at once, and its stream's loop returns err.
func (p *Pool) cutOff(s *session, reason string, err error) {
	if s.end.set(err) {
		p.cutOffs.of(reason).Add(1)
		p.log.Warn("worker cut off", "worker", s.name, "reason", reason, "error", err)
	}
}

// trySend queues m for s's worker without waiting. A full queue cuts the
// worker off: it is not reading what it is sent.
func (p *Pool) trySend(s *session, m *taskdv1.WorkResponse) bool {
	select {
	case s.out <- m:
		return true
	case <-s.gone:
		return false
	default:
	}
	p.cutOff(s, CutQueueFull, status.Errorf(codes.ResourceExhausted,
		"worker cut off: its queue of %d messages is full; it is not reading its stream", cap(s.out)))
	return false
}

// sender sends a session's queued messages on its stream, in order.
type sender struct {
	s      *session
	send   func(*taskdv1.WorkResponse) error
	quit   chan struct{}
	done   chan struct{}
	failed chan error // cap 1: the Send that failed, after which it stops

	mu      sync.Mutex
	stopped bool
	sending bool
	since   time.Time // when the send in progress began
}

// startSender starts s's sender. Its owner, the stream's handler, stops it
// with stop before returning.
func startSender(s *session, send func(*taskdv1.WorkResponse) error) *sender {
	sd := &sender{s: s, send: send, quit: make(chan struct{}), done: make(chan struct{}), failed: make(chan error, 1)}
	go sd.run()
	return sd
}

func (sd *sender) run() {
	defer close(sd.done)
	for {
		var m *taskdv1.WorkResponse
		select {
		case m = <-sd.s.out:
		case <-sd.quit:
			return
		}
		sd.mu.Lock()
		if sd.stopped {
			sd.mu.Unlock()
			return
		}
		sd.sending, sd.since = true, time.Now()
		sd.mu.Unlock()
		err := sd.send(m)
		sd.mu.Lock()
		sd.sending = false
		stopped := sd.stopped
		sd.mu.Unlock()
		if stopped {
			return
		}
		if err != nil {
			sd.failed <- err
			return
		}
	}
}

// stuckFor is how long the send in progress has waited; 0 when idle.
func (sd *sender) stuckFor() time.Duration {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if !sd.sending {
		return 0
	}
	return time.Since(sd.since)
}

// stop ends the sender: nothing more is sent. It waits for the sender,
// unless a Send is in progress: that one can only return once the handler
// has returned (gRPC then cancels the stream, which ends the Send), so the
// sender ends right after its owner returns, sending nothing more.
func (sd *sender) stop() {
	sd.mu.Lock()
	sd.stopped = true
	busy := sd.sending
	sd.mu.Unlock()
	close(sd.quit)
	if !busy {
		<-sd.done
	}
}
