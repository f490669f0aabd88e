package eventhub

import (
	"context"
	"math"
	"sync"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// pos is a place in the event stream: an event's revision and index.
type pos struct {
	rev int64
	idx int
}

// maxIdx as a pos's index stands for the whole revision.
const maxIdx = math.MaxInt32

// covers reports whether the event idx of revision rev is at or before p.
func (p pos) covers(rev int64, idx int) bool {
	return rev < p.rev || rev == p.rev && idx <= p.idx
}

// subscriber is one WatchEvents stream's buffer: the hub (and, while the
// stream catches up from an old cursor, its catch-up watch) offers it
// events, and the stream's goroutine takes them to send. Offers never
// wait: an offer that does not fit ends the subscriber (the hub's) or is
// refused until the stream has sent what it holds (the catch-up's, which
// then watches again from where it stopped).
//
// The buffer bound is in encoded bytes (limit) of the events waiting to be
// sent; one revision's events are always taken into an empty buffer,
// however large. The response being sent (at most maxResponseBytes, or one
// event) is taken out of the buffer first. While catching up, the hub's
// events wait in held, bounded the same way, so a catch-up holds at most
// twice the bound.
//
// Lock: mu guards the buffers and the end; it is taken under Hub.mu (the
// Hub's offers and ends), never the other way.
type subscriber struct {
	filter Filter
	limit  int
	wake   chan struct{} // the stream has something to send, or was ended
	room   chan struct{} // the stream sent what it held

	mu       sync.Mutex
	queue    buffer // what the stream sends next; its cursor is the stream's place
	held     buffer // the hub's events while catching up
	catching bool   // the catch-up delivers; the hub's events are held
	skip     pos    // the hub's events at or before it were delivered otherwise
	end      error
}

// buffer is events waiting to be sent, their encoded bytes, and the cursor
// of the last event looked at for them (sent or filtered out).
type buffer struct {
	evs   []sizedEvent
	bytes int
	acc   string
}

// fits reports whether n events of bytes go into b within limit: one
// revision's events always go into an empty buffer, however large.
func (b *buffer) fits(n, bytes, limit int) bool {
	return n == 0 || b.bytes+bytes <= limit || len(b.evs) == 0
}

// add appends evs of bytes; last, when not "", is the cursor looked at
// last.
func (b *buffer) add(evs []sizedEvent, bytes int, last string) {
	b.evs, b.bytes = append(b.evs, evs...), b.bytes+bytes
	if last != "" {
		b.acc = last
	}
}

func newSubscriber(f Filter, limit int, from pos, cursor string) *subscriber {
	return &subscriber{filter: f, limit: limit, skip: from, queue: buffer{acc: cursor},
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// match returns the events of re the subscriber wants after skip, their
// bytes, and the cursor of the last event it looked at.
func (s *subscriber) match(re revEvents) (out []sizedEvent, bytes int, last string) {
	for _, se := range re.evs {
		if s.skip.covers(re.rev, se.idx) {
			continue
		}
		last = se.ev.Cursor
		if s.filter.match(se.ev) {
			out = append(out, se)
			bytes += se.size
		}
	}
	return out, bytes, last
}

// offerLive gives the subscriber one revision of the hub's; false means it
// has ended and leaves the hub.
func (s *subscriber) offerLive(re revEvents) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		return false
	}
	evs, bytes, last := s.match(re)
	if s.catching {
		if !s.held.fits(len(evs), bytes, s.limit) {
			s.finishLocked(errSubBehind)
			return false
		}
		s.held.add(evs, bytes, last)
		return true
	}
	if !s.queue.fits(len(evs), bytes, s.limit) {
		s.finishLocked(errSubBehind)
		return false
	}
	s.queue.add(evs, bytes, last)
	if len(evs) > 0 {
		signal(s.wake)
	}
	return true
}

// offerCatchUp gives the subscriber one revision of its catch-up; false
// means there is no room now (wait for room) or the subscriber has ended.
func (s *subscriber) offerCatchUp(re revEvents) (ok bool, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		return false, true
	}
	evs, bytes, last := s.match(re)
	if !s.queue.fits(len(evs), bytes, s.limit) {
		return false, false
	}
	s.queue.add(evs, bytes, last)
	if len(evs) > 0 {
		signal(s.wake)
	}
	return true, false
}

// startLive makes the hub's offers go straight to the queue, skipping
// those up to delivered (the catch-up delivered them).
func (s *subscriber) startLive(delivered pos) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delivered.covers(s.skip.rev, s.skip.idx) {
		s.skip = delivered
	}
}

// startCatchUp makes the hub's offers wait in held until caughtUp.
func (s *subscriber) startCatchUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catching = true
}

// caughtUp ends the catch-up: the hub's held events follow the catch-up's.
func (s *subscriber) caughtUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catching = false
	if s.end != nil {
		return
	}
	s.queue.add(s.held.evs, s.held.bytes, s.held.acc)
	s.held = buffer{}
	signal(s.wake)
}

// finish ends the subscriber with why: it takes no more events, and its
// stream ends once it has sent what it holds.
func (s *subscriber) finish(why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(why)
}

func (s *subscriber) finishLocked(why error) {
	if s.end != nil {
		return
	}
	s.end = why
	s.held = buffer{} // after the queue: never sent
	signal(s.wake)
	signal(s.room)
}

// drained reports whether the queue is empty (or the subscriber ended).
func (s *subscriber) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue.evs) == 0 || s.end != nil
}

// ended reports whether the subscriber was ended.
func (s *subscriber) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end != nil
}

// maxResponseBytes bounds one WatchEventsResponse (far below gRPC's 4 MiB
// default receive limit); a single larger event goes alone.
const maxResponseBytes = 1 << 20

// serve sends the subscriber's events until it is ended (then it returns
// the *StreamEndError, or the error it was ended with), ctx ends, or send
// fails.
func (s *subscriber) serve(ctx context.Context, send func([]*taskdv1.Event) error) error {
	for {
		// One response at a time leaves the rest in the queue, counted
		// against the bound while this one is sent.
		s.mu.Lock()
		n, bytes := 0, 0
		q := &s.queue
		for n < len(q.evs) && (n == 0 || bytes+q.evs[n].size <= maxResponseBytes) {
			bytes += q.evs[n].size
			n++
		}
		evs := make([]*taskdv1.Event, n)
		for i := range evs {
			evs[i] = q.evs[i].ev
			q.evs[i] = sizedEvent{} // not kept alive by the queue's array
		}
		q.evs, q.bytes = q.evs[n:], q.bytes-bytes
		end, acc := s.end, q.acc
		s.mu.Unlock()
		if n > 0 {
			if err := send(evs); err != nil {
				return err
			}
			signal(s.room)
			continue
		}
		signal(s.room)
		if end != nil {
			return endError(end, acc)
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
