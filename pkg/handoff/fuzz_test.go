package handoff_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/handoff"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// FuzzDecodeEntry feeds arbitrary bytes to the watcher's decoding of an
// entry value, and arbitrary parts to the writer's entry
// (writepath.PutHandoff): a value decodes with an error naming its key or
// into an entry that re-encodes to itself, and an entry written by
// PutHandoff is read back as written, under a key in the receiving node's
// area that names the identity and the task.
func FuzzDecodeEntry(f *testing.F) {
	for _, rec := range []*storev1.HandoffEntry{
		{}, {Identity: "bob", From: "n2", TaskId: "*"}, {Identity: "a/b%", From: "n1", TaskId: "01hx"},
	} {
		b, err := proto.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "n1", "n2", rec.Identity, rec.TaskId)
	}
	f.Add([]byte{0x0a, 0x01, 0xff}, "n1", "n2", "bob", "*") // identity: invalid UTF-8
	f.Add([]byte{0x0a, 0x05, 'b'}, "n1", "n2", "山田", "t")   // truncated
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "n", "m", "x", "y")
	f.Fuzz(func(t *testing.T, value []byte, node, from, id, taskID string) {
		k := keyspace.New("/taskd/")
		key := k.Entry(node, "x", "*")
		e, err := handoff.DecodeEntry(key, value, 42)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Fatalf("error %q does not name the key %q", err, key)
			}
		} else {
			if e.Key != key || e.Rev != 42 ||
				!utf8.ValidString(e.Identity) || !utf8.ValidString(e.From) || !utf8.ValidString(e.TaskID) {
				t.Fatalf("decodeEntry = %+v", e)
			}
			b, err := proto.Marshal(&storev1.HandoffEntry{Identity: e.Identity, From: e.From, TaskId: e.TaskID})
			if err != nil {
				t.Fatalf("re-encode %+v: %v", e, err)
			}
			if again, err := handoff.DecodeEntry(key, b, 42); err != nil || again != e {
				t.Fatalf("decode(encode(%+v)) = %+v, %v", e, again, err)
			}
		}

		op, err := writepath.PutHandoff(k, node, from, id, taskID)
		if err != nil {
			if utf8.ValidString(from) && utf8.ValidString(id) && utf8.ValidString(taskID) {
				t.Fatalf("PutHandoff(%q, %q, %q, %q): %v", node, from, id, taskID, err)
			}
			return
		}
		written := string(op.KeyBytes())
		got, err := handoff.DecodeEntry(written, op.ValueBytes(), 7)
		if want := (handoff.Entry{Key: written, Rev: 7, Identity: id, From: from, TaskID: taskID}); err != nil || got != want {
			t.Fatalf("entry written by PutHandoff reads back as %+v, %v; want %+v", got, err, want)
		}
		if strings.Contains(node, "/") || identity.Validate(id) != nil {
			return
		}
		rest, ok := strings.CutPrefix(written, k.Area(node))
		enc, task, cut := strings.Cut(rest, "/")
		if dec, err := keyspace.Decode(enc); !ok || !cut || err != nil || dec != id || task != taskID {
			t.Fatalf("entry key %q is not <area of %q><encoded %q>/%q", written, node, id, taskID)
		}
	})
}
