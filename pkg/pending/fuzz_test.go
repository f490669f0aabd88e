package pending

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// decode128 is the inverse of encode128 for a string of TaskIDLen
// characters of the alphabet; ok is false for anything else.
func decode128(s string) (raw [16]byte, ok bool) {
	if len(s) != TaskIDLen {
		return raw, false
	}
	var hi, lo uint64
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(crockford, s[i])
		if d < 0 {
			return raw, false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(d)
	}
	for i := 0; i < 8; i++ {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	return raw, true
}

// FuzzTaskID checks task ids on any string: ValidTaskID accepts exactly the
// encodings of 128-bit values (a valid id decodes and encodes back to
// itself, anything else is refused), and the encoding keeps byte order, so
// ids sort like the values they encode.
func FuzzTaskID(f *testing.F) {
	src := NewIDSource()
	f.Add(src.New(), src.New())
	f.Add("00000000000000000000000000", "7zzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Add("80000000000000000000000000", "0000000000000000000000000i")
	f.Add("01HX", "0000000000000000000000000O")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []string{a, b} {
			raw, decodable := decode128(s)
			roundTrips := decodable && encode128(raw) == s
			if ValidTaskID(s) != roundTrips {
				t.Fatalf("ValidTaskID(%q) = %v, but decoding and encoding it back gives it back: %v", s, ValidTaskID(s), roundTrips)
			}
		}
		// a and b as raw bytes: encodings compare like the values.
		var ra, rb [16]byte
		copy(ra[:], a)
		copy(rb[:], b)
		ea, eb := encode128(ra), encode128(rb)
		if !ValidTaskID(ea) || !ValidTaskID(eb) {
			t.Fatalf("encode128 made an invalid id: %q, %q", ea, eb)
		}
		if got, want := strings.Compare(ea, eb), bytes.Compare(ra[:], rb[:]); got != want {
			t.Fatalf("encode128 order %d, byte order %d: %x → %q, %x → %q", got, want, ra, ea, rb, eb)
		}
	})
}

// FuzzIDSource runs an id source on a clock that reads fuzzed instants,
// including ones that go backwards: every id is valid and each is greater
// than the one before.
func FuzzIDSource(f *testing.F) {
	f.Add(int64(1_900_000_000_000), int64(0), int64(-5), int64(1))
	f.Add(int64(0), int64(0), int64(0), int64(0))
	f.Add(int64(1<<47), int64(-(1 << 40)), int64(1<<40), int64(-1))
	f.Fuzz(func(t *testing.T, startMs, d1, d2, d3 int64) {
		// Ids hold 48 bits of milliseconds since 1970: keep the clock there.
		clamp := func(ms int64) int64 { return min(max(ms, 0), 1<<48-1) }
		times := []int64{clamp(startMs)}
		for _, d := range []int64{d1, d2, d3} {
			times = append(times, clamp(times[len(times)-1]+max(min(d, 1<<48), -(1<<48))))
		}
		var clock []time.Time
		for _, ms := range times {
			clock = append(clock, time.UnixMilli(ms), time.UnixMilli(ms))
		}
		s := &IDSource{now: seqClock(clock...)}
		prev := ""
		for range clock {
			id := s.New()
			if !ValidTaskID(id) {
				t.Fatalf("IDSource made invalid id %q at clock %v", id, times)
			}
			if id <= prev {
				t.Fatalf("id %q after %q: not increasing (clock %v)", id, prev, times)
			}
			prev = id
		}
	})
}

// FuzzDecodeTaskRecord feeds arbitrary bytes as a stored task record:
// Decode fails, or returns a record that encodes and decodes to an equal
// record.
func FuzzDecodeTaskRecord(f *testing.F) {
	at := timestamppb.New(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC))
	for _, rec := range []*storev1.TaskRecord{
		{},
		{Id: "01hx0000000000000000000000", State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: at,
			Spec: &taskdv1.TaskSpec{Identity: "bob", Kind: "mail", Payload: []byte("hi"),
				Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
					Start: at, Interval: durationpb.New(time.Minute), Count: 3}}}}},
			Triggers: []*storev1.TriggerState{{Next: at, Fired: 2}}, RunCount: 9, Attempt: 2,
			Running:  &storev1.RunMarker{RunNumber: 9, Node: "n1", Incarnation: "i", StartedAt: at, FireTime: at, Trigger: -1},
			Misfires: 4, HistorySeq: 12},
	} {
		b, err := Encode(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff})
	f.Add([]byte{0x0a, 0x01, 0xc3})                                        // id: invalid UTF-8
	f.Add([]byte{0x12, 0x05, 0x0a, 0x03, 'b', 'o', 'b', 0xf8, 0x01, 0x01}) // unknown field kept
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b)
		if err != nil {
			if rec != nil {
				t.Fatalf("Decode returned a record with error %v", err)
			}
			return
		}
		enc, err := Encode(rec)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(rec)): %v", err)
		}
		if !proto.Equal(rec, again) {
			t.Fatalf("decode(encode(rec)) differs:\n%v\n%v", rec, again)
		}
	})
}

// FuzzGlanceAt feeds arbitrary bytes to GlanceAt: whenever it accepts a
// record that decodes, the decoded record says the same (id, kind,
// priority, the earliest next fire time of its triggers) and is plainly
// waiting (state SCHEDULED; no run marker, recovery, retry, manual run,
// task pause, overlap or on-start-up trigger). A node queues a glanced
// record cold on Glance.Due, so a disagreement would run a task late.
func FuzzGlanceAt(f *testing.F) {
	at := timestamppb.New(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC))
	early := timestamppb.New(time.Date(2029, 1, 2, 3, 4, 5, 6, time.UTC))
	every := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Start: at, Interval: durationpb.New(time.Minute)}}}
	for _, rec := range []*storev1.TaskRecord{
		{},
		{Id: "01hx0000000000000000000000", State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: at,
			Spec:     &taskdv1.TaskSpec{Identity: "bob", Kind: "mail", Priority: -3, Payload: []byte("hi"), Triggers: []*taskdv1.Trigger{every, every}},
			Triggers: []*storev1.TriggerState{{Next: at, Fired: 2}, {Next: early}}},
		{Id: "01hx0000000000000000000001", State: taskdv1.TaskState_TASK_STATE_SCHEDULED,
			Spec:     &taskdv1.TaskSpec{Kind: "mail", AllowOverlap: true, Triggers: []*taskdv1.Trigger{every}},
			Triggers: []*storev1.TriggerState{{Next: at}}},
		{Id: "01hx0000000000000000000002", State: taskdv1.TaskState_TASK_STATE_RUNNING,
			Spec:     &taskdv1.TaskSpec{Kind: "mail", Triggers: []*taskdv1.Trigger{every}},
			Triggers: []*storev1.TriggerState{{Next: at}}, Running: &storev1.RunMarker{RunNumber: 1}},
	} {
		b, err := Encode(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, ok := GlanceAt(b)
		if !ok {
			return
		}
		rec, err := Decode(b)
		if err != nil {
			return // a node that glanced at it reads it again before it is due, and fails there
		}
		var due time.Time
		for _, st := range rec.Triggers {
			if st.Next != nil && (due.IsZero() || st.Next.AsTime().Before(due)) {
				due = st.Next.AsTime()
			}
		}
		for _, tr := range rec.GetSpec().GetTriggers() {
			if tr.GetOnStartup() != nil {
				t.Fatalf("glanced at a record with an on-start-up trigger: %v", rec)
			}
		}
		switch {
		case rec.Id != g.ID || rec.Spec.GetKind() != string(g.Kind) || rec.Spec.GetPriority() != g.Priority:
			t.Fatalf("glance %+v; record id %q kind %q priority %d", g, rec.Id, rec.Spec.GetKind(), rec.Spec.GetPriority())
		case !due.Equal(g.Due):
			t.Fatalf("glanced due %s; the record's earliest next fire time is %s", g.Due, due)
		case rec.State != taskdv1.TaskState_TASK_STATE_SCHEDULED || rec.Running != nil || rec.RecoveryPending != nil ||
			rec.RetryAt != nil || rec.ManualRequested || rec.PausedAt != nil || rec.Spec.GetAllowOverlap():
			t.Fatalf("glanced at a record that is not plainly waiting: %v", rec)
		}
	})
}
