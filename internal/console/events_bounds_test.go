package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// stalledViewer is a browser's live-event stream over a raw TCP
// connection with a small receive buffer, which reads nothing until told.
type stalledViewer struct {
	conn net.Conn
	req  *http.Request
}

func openStalledViewer(t *testing.T, addr, lastEventID string) *stalledViewer {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/ui/events/stream", nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	return &stalledViewer{conn: conn, req: req}
}

// cursorAfter reports whether cursor a is b or later.
func cursorAfter(t *testing.T, a, b string) bool {
	t.Helper()
	var ar, ai, br, bi int64
	if _, err := fmt.Sscanf(a+" "+b, "%d.%d %d.%d", &ar, &ai, &br, &bi); err != nil {
		t.Fatalf("cursors %q, %q: %v", a, b, err)
	}
	return ar > br || ar == br && ai >= bi
}

// smallSendBuffers gives every accepted connection a 4 KiB send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// sseEvent is one complete server-sent event.
type sseEvent struct{ id, typ, data string }

// readAll reads the response until the server ends it (or cuts it off)
// and returns its complete events: a browser dispatches an event only at
// its blank line, so a cut-off last one is not among them.
func (v *stalledViewer) readAll(t *testing.T) []sseEvent {
	t.Helper()
	_ = v.conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(v.conn), v.req)
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	defer resp.Body.Close()
	return parseSSE(resp.Body)
}

func parseSSE(r io.Reader) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

// firstID is the id of the first task event of a stream from lastEventID.
func firstID(t *testing.T, addr, lastEventID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ui/events/stream", nil)
	req.Header.Set("Last-Event-ID", lastEventID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pr, pw := io.Pipe()
	go func() { _, _ = io.Copy(pw, resp.Body); pw.Close() }()
	sc := bufio.NewScanner(pr)
	defer pr.Close()
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			cancel()
			return id
		}
	}
	t.Fatalf("the stream from Last-Event-ID %s ended without an event", lastEventID)
	return ""
}

// apiFirstCursor is the cursor of the first event after cursor, straight
// from the API.
func (tn *testNode) apiFirstCursor(t *testing.T, cursor string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := tn.api.WatchEvents(ctx, &taskdv1.WatchEventsRequest{Cursor: cursor})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp.Events[0].Cursor
}

// A viewer of the live events that stops reading costs a bounded amount:
// it is cut off once a write to it waits longer than the write timeout,
// or, when the API ends the console's stream for it falling behind, it
// gets a "resume" event naming the cursor and the stream ends. Either
// way its reconnection with Last-Event-ID goes on right after the last
// event it got.
func TestEventStreamEndsAViewerThatStopsReading(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", false)
	closed := make(chan struct{}, 16)
	web := httptest.NewUnstartedServer(n.console)
	// Small socket buffers on both sides: a viewer that reads nothing
	// blocks the console's writes after a few KiB, not megabytes.
	web.Listener = smallSendBuffers{web.Listener}
	web.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	web.Start()
	t.Cleanup(web.Close)
	addr := web.Listener.Addr().String()
	defer func(d time.Duration) { viewerWriteTimeout = d }(viewerWriteTimeout)

	t.Run("cut off at the write timeout", func(t *testing.T) {
		viewerWriteTimeout = 200 * time.Millisecond
		v := openStalledViewer(t, addr, "")
		n.schedule(t, "busy", 5*time.Millisecond, nil) // events keep coming
		select {
		case <-closed:
		case <-time.After(wait):
			t.Fatal("a viewer that reads nothing was not cut off")
		}
		evs := v.readAll(t)
		if len(evs) == 0 || evs[len(evs)-1].id == "" {
			t.Fatalf("the viewer got %d complete events before it was cut off, want some with ids", len(evs))
		}
		last := evs[len(evs)-1].id
		if got, want := firstID(t, addr, last), n.apiFirstCursor(t, last); got != want {
			t.Fatalf("reconnected with Last-Event-ID %s: first event %s, want %s", last, got, want)
		}
	})

	t.Run("ended by the API with a resume cursor", func(t *testing.T) {
		viewerWriteTimeout = 2 * wait // the API ends the stream first
		// Only the chart feed's stream is left of the streams before.
		tst.Eventually(t, wait, func() bool { return n.node.EventStreams() == 1 }, "the chart feed's stream alone")
		streams := 1
		v := openStalledViewer(t, addr, "")
		tst.Eventually(t, wait, func() bool { return n.node.EventStreams() == streams+1 }, "the viewer's API stream")
		// Bursts of tasks: far more events than the API stream's buffer.
		// One burst after another: twenty at once saturate etcd on a
		// loaded machine, each write then outlasting its etcd timeout.
		for b := range 20 {
			func() {
				req := &taskdv1.ScheduleTasksRequest{}
				for i := range 100 {
					req.Tasks = append(req.Tasks, &taskdv1.TaskSpec{Identity: fmt.Sprintf("burst-%d-%d", b, i%10), Kind: "work",
						Scope:          taskdv1.Scope_SCOPE_IDENTITY,
						IdempotencyKey: fmt.Sprintf("burst-%d-%d", b, i),
						Triggers:       []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}})
				}
				// Twenty bursts at once may outlast a write's etcd timeout
				// on a loaded machine (UNAVAILABLE: the outcome is unknown);
				// a client then retries with the same idempotency keys, as
				// the contract says, and gets one task each. The deadline
				// only keeps a hung call from hanging the test: how long
				// the bursts take is not what this test asserts.
				ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
				defer cancel()
				var err error
				for range 5 {
					if _, err = n.api.ScheduleTasks(as(ctx, adminToken), req); status.Code(err) != codes.Unavailable {
						break
					}
				}
				if err != nil {
					t.Errorf("ScheduleTasks: %v", err)
				}
			}()
		}
		tst.Eventually(t, wait, func() bool { return n.node.EventStreams() == streams }, "the API to end the viewer's stream")
		evs := v.readAll(t)
		if len(evs) == 0 || evs[len(evs)-1].typ != "resume" || evs[len(evs)-1].id == "" {
			t.Fatalf("the stream's last event %+v, want a resume event with an id", evs[len(evs)-1])
		}
		last := evs[len(evs)-1].id
		if len(evs) > 1 && !cursorAfter(t, last, evs[len(evs)-2].id) {
			t.Fatalf("resume cursor %s is before the last event sent %s", last, evs[len(evs)-2].id)
		}
		if got, want := firstID(t, addr, last), n.apiFirstCursor(t, last); got != want {
			t.Fatalf("reconnected with Last-Event-ID %s: first event %s, want %s", last, got, want)
		}
		t.Logf("the viewer got %d events, then resume at %s", len(evs)-1, last)
	})
}
