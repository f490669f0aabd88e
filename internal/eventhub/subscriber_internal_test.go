package eventhub

import (
	"context"
	"errors"
	"slices"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// revision is one revision's events of the given encoded sizes (kind "k"),
// as the Hub offers them.
func revision(rev int64, sizes ...int) revEvents {
	re := revEvents{rev: rev}
	for i, size := range sizes {
		re.evs = append(re.evs, sizedEvent{ev: &taskdv1.Event{Kind: "k", Cursor: formatCursor(rev, i)}, idx: i, size: size})
	}
	return re
}

// drain serves s until it ends, and returns the cursors of the events it
// sent, in each response, and the error it ended with.
func drain(t *testing.T, s *subscriber) (responses [][]string, err error) {
	t.Helper()
	err = s.serve(context.Background(), func(evs []*taskdv1.Event) error {
		var cursors []string
		for _, ev := range evs {
			cursors = append(cursors, ev.Cursor)
		}
		responses = append(responses, cursors)
		return nil
	})
	return responses, err
}

// endedWith checks that err is a *StreamEndError of kind want, to resume
// from cursor.
func endedWith(t *testing.T, err, want error, cursor string) {
	t.Helper()
	var se *StreamEndError
	if !errors.As(err, &se) || !errors.Is(err, want) {
		t.Fatalf("the stream ended with %v, want a *StreamEndError of %v", err, want)
	}
	if se.Cursor != cursor {
		t.Fatalf("the stream ended with cursor %q, want %q", se.Cursor, cursor)
	}
}

// endsAfterSending ends s with why and checks that it sent want (what says
// which), then ended with a *StreamEndError of kind end, to resume from
// cursor.
func endsAfterSending(t *testing.T, s *subscriber, why error, want []string, what string, end error, cursor string) {
	t.Helper()
	s.finish(why)
	responses, err := drain(t, s)
	if got := slices.Concat(responses...); !slices.Equal(got, want) {
		t.Fatalf("sent %v, want %s", got, what)
	}
	endedWith(t, err, end, cursor)
}

// TestSubscriberEndsAReaderBehind: the Hub's offers fill the buffer up to
// its bound; the one that does not fit ends the subscriber, which still
// sends what it took and then ends with ErrReaderBehind and the cursor of
// the last event it sent.
func TestSubscriberEndsAReaderBehind(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	if !s.offerLive(revision(11, 60)) || !s.offerLive(revision(12, 30)) {
		t.Fatal("offers within the bound refused")
	}
	if s.offerLive(revision(13, 20)) {
		t.Fatal("an offer past the bound taken")
	}
	if !s.ended() {
		t.Fatal("the subscriber behind was not ended")
	}
	if s.offerLive(revision(14, 1)) {
		t.Fatal("an ended subscriber took an offer")
	}
	responses, err := drain(t, s)
	if got := slices.Concat(responses...); !slices.Equal(got, []string{"11.0", "12.0"}) {
		t.Fatalf("sent %v, want the events taken before the end", got)
	}
	endedWith(t, err, ErrReaderBehind, "12.0")
}

// TestSubscriberTakesAnyRevisionIntoAnEmptyBuffer: one revision's events
// always fit an empty buffer, however large; the next offer then does not.
func TestSubscriberTakesAnyRevisionIntoAnEmptyBuffer(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	if !s.offerLive(revision(11, 80, 80)) {
		t.Fatal("a revision over the bound refused by an empty buffer")
	}
	if s.offerLive(revision(12, 1)) {
		t.Fatal("an offer taken into a buffer over its bound")
	}
}

// TestSubscriberSkipsWhatWasDelivered: the events at or before the
// stream's start (or what its catch-up delivered) are not offered again;
// startLive moves that place forward only.
func TestSubscriberSkipsWhatWasDelivered(t *testing.T) {
	s := newSubscriber(Filter{}, 1000, pos{11, 0}, "11.0")
	s.startLive(pos{10, maxIdx}) // behind the start: no change
	s.offerLive(revision(11, 1, 1))
	s.startLive(pos{12, 0})
	s.offerLive(revision(12, 1, 1))
	endsAfterSending(t, s, errStreamStopping, []string{"11.1", "12.1"}, "11.1 and 12.1 only", ErrStreamInterrupted, "12.1")
}

// TestSubscriberFilters: only matching events are sent, but the cursor to
// resume from passes the others too, so a new stream does not look at
// them again.
func TestSubscriberFilters(t *testing.T) {
	s := newSubscriber(Filter{Kind: "a"}, 1000, pos{10, maxIdx}, "10.2147483647")
	re := revision(11, 1, 1, 1)
	re.evs[1].ev.Kind = "a"
	s.offerLive(re)
	endsAfterSending(t, s, errEventGap, []string{"11.1"}, "the kind a event alone", ErrStreamInterrupted, "11.2")
}

// TestSubscriberCatchUpWaitsForRoom: a catch-up offer that does not fit is
// refused without ending the subscriber, and taken once the stream has
// sent what it held.
func TestSubscriberCatchUpWaitsForRoom(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	if ok, ended := s.offerCatchUp(revision(11, 90)); !ok || ended {
		t.Fatalf("offerCatchUp into an empty buffer = %v, %v", ok, ended)
	}
	if ok, ended := s.offerCatchUp(revision(12, 20)); ok || ended {
		t.Fatalf("offerCatchUp past the bound = %v, %v; want refused, not ended", ok, ended)
	}
	if s.drained() {
		t.Fatal("drained with an event waiting")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sent []string
	err := s.serve(ctx, func(evs []*taskdv1.Event) error {
		for _, ev := range evs {
			sent = append(sent, ev.Cursor)
		}
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || !slices.Equal(sent, []string{"11.0"}) {
		t.Fatalf("serve sent %v and returned %v", sent, err)
	}
	select {
	case <-s.room:
	default:
		t.Fatal("no room signalled after the send")
	}
	if !s.drained() {
		t.Fatal("not drained after the send")
	}
	if ok, ended := s.offerCatchUp(revision(12, 20)); !ok || ended {
		t.Fatalf("offerCatchUp after the send = %v, %v", ok, ended)
	}
	s.finish(errSubBehind)
	if ok, ended := s.offerCatchUp(revision(13, 1)); ok || !ended {
		t.Fatalf("offerCatchUp to an ended subscriber = %v, %v", ok, ended)
	}
}

// TestSubscriberHoldsTheHubWhileCatchingUp: while the catch-up delivers,
// the Hub's offers wait in held; once caught up they follow the
// catch-up's, and the cursor is the Hub's last.
func TestSubscriberHoldsTheHubWhileCatchingUp(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	s.startCatchUp()
	if !s.offerLive(revision(20, 10)) {
		t.Fatal("a held offer refused")
	}
	s.offerCatchUp(revision(15, 10))
	s.caughtUp()
	endsAfterSending(t, s, errStreamStopping, []string{"15.0", "20.0"}, "the catch-up's event, then the Hub's", ErrStreamInterrupted, "20.0")
}

// TestSubscriberBoundsWhatItHolds: the Hub's events held during a
// catch-up are bounded as the queue is: past the bound the subscriber is
// ended, and what it held is never sent.
func TestSubscriberBoundsWhatItHolds(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	s.startCatchUp()
	if !s.offerLive(revision(20, 90)) {
		t.Fatal("a held offer within the bound refused")
	}
	if s.offerLive(revision(21, 20)) {
		t.Fatal("a held offer past the bound taken")
	}
	s.caughtUp()
	responses, err := drain(t, s)
	if len(responses) != 0 {
		t.Fatalf("sent %v after the end, want nothing held sent", responses)
	}
	endedWith(t, err, ErrReaderBehind, "10.2147483647")
}

// TestServeBoundsAResponse: a response holds at most maxResponseBytes of
// events, or one larger event alone.
func TestServeBoundsAResponse(t *testing.T) {
	s := newSubscriber(Filter{}, 8*maxResponseBytes, pos{10, maxIdx}, "10.2147483647")
	third := maxResponseBytes / 3
	s.offerLive(revision(11, third, third, third, third))
	s.offerLive(revision(12, 2*maxResponseBytes))
	s.finish(errStreamStopping)
	responses, _ := drain(t, s)
	want := [][]string{{"11.0", "11.1", "11.2"}, {"11.3"}, {"12.0"}}
	if !slices.EqualFunc(responses, want, slices.Equal) {
		t.Fatalf("responses %v, want %v", responses, want)
	}
}

// TestServeReturnsTheSendError: a failed send ends the stream with its
// error.
func TestServeReturnsTheSendError(t *testing.T) {
	s := newSubscriber(Filter{}, 100, pos{10, maxIdx}, "10.2147483647")
	s.offerLive(revision(11, 1))
	broken := errors.New("broken")
	if err := s.serve(context.Background(), func([]*taskdv1.Event) error { return broken }); err != broken {
		t.Fatalf("serve returned %v, want the send's error", err)
	}
}
