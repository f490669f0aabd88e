package eventhub

import (
	"errors"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestCursors: a cursor is "<revision>.<index>", as formatCursor writes
// it; anything else is ErrInvalidCursor, named in the error.
func TestCursors(t *testing.T) {
	if got := formatCursor(12, 3); got != "12.3" {
		t.Fatalf("formatCursor(12, 3) = %q", got)
	}
	if rev, idx, err := parseCursor("12.3"); err != nil || rev != 12 || idx != 3 {
		t.Fatalf("parseCursor(12.3) = %d, %d, %v", rev, idx, err)
	}
	for _, c := range []string{"", "12", "a.1", "1.x", "0.1", "-1.0", "1.-1", "1.2.3"} {
		_, _, err := parseCursor(c)
		if !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("parseCursor(%q) = %v, want ErrInvalidCursor", c, err)
		}
	}
	if _, _, err := parseCursor("12"); err.Error() != `"12" is not a cursor from an earlier event` {
		t.Errorf("the error reads %q", err)
	}
}

// TestFilter: every field set must match; empty fields match all.
func TestFilter(t *testing.T) {
	ev := &taskdv1.Event{Identity: "i", TaskId: "t", Kind: "k", Node: "n", Type: taskdv1.EventType_EVENT_TYPE_FIRED}
	for _, tc := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{Identity: "i", TaskID: "t", Kind: "k", Node: "n", Types: []taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_STARTED, taskdv1.EventType_EVENT_TYPE_FIRED}}, true},
		{Filter{Identity: "j"}, false},
		{Filter{TaskID: "u"}, false},
		{Filter{Kind: "l"}, false},
		{Filter{Node: "m"}, false},
		{Filter{Types: []taskdv1.EventType{taskdv1.EventType_EVENT_TYPE_STARTED}}, false},
	} {
		if got := tc.f.match(ev); got != tc.want {
			t.Errorf("%+v matches: %v, want %v", tc.f, got, tc.want)
		}
	}
}
