package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/eventview"
	"github.com/taskd/taskd/internal/resume"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// heartbeat is how often an idle event stream sends a comment, so proxies
// and browsers keep it open.
const heartbeat = 15 * time.Second

// viewerWriteTimeout bounds each write of a live-event stream to its
// viewer: a browser that takes nothing for this long (it stopped reading,
// or its network did) is cut off, and reconnects from the last event it
// got (Last-Event-ID). With the one response the stream reads ahead and
// the API stream's own bounded buffer, this is what a viewer that stopped
// reading can cost the node. A variable so that tests can shorten it.
var viewerWriteTimeout = 10 * time.Second

// eventFilter is a live-event filter as given in the URL.
type eventFilter struct {
	identity, kind string
	types          []taskdv1.EventType
}

// parseEventFilter reads identity, kind and type (comma-separated event
// types, with or without the EVENT_TYPE_ prefix).
func parseEventFilter(q url.Values) (eventFilter, error) {
	f := eventFilter{identity: strings.TrimSpace(q.Get("identity")), kind: strings.TrimSpace(q.Get("kind"))}
	if t := strings.TrimSpace(q.Get("type")); t != "" {
		for s := range strings.SplitSeq(t, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			v, ok := taskdv1.EventType_value["EVENT_TYPE_"+strings.TrimPrefix(s, "EVENT_TYPE_")]
			if !ok || v == 0 {
				return f, badInput("type", "%q is not an event type (%s)", s, strings.Join(eventTypeNames(), ", "))
			}
			f.types = append(f.types, taskdv1.EventType(v))
		}
	}
	return f, nil
}

// watch is the filter of the stream that resumes after cursor.
func (f eventFilter) watch(cursor string) client.EventFilter {
	w := client.EventFilter{Identity: f.identity, Kind: f.kind, Cursor: cursor}
	for _, t := range f.types {
		w.Types = append(w.Types, client.EventType(strings.TrimPrefix(t.String(), "EVENT_TYPE_")))
	}
	return w
}

// liveEvent is one event as the page's script gets it.
type liveEvent struct {
	Type     string `json:"type"`
	Time     string `json:"time"`
	Node     string `json:"node"`
	Identity string `json:"identity"`
	TaskID   string `json:"task_id,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Run      int64  `json:"run,omitempty"`
	Attempt  int32  `json:"attempt,omitempty"`
	Fence    string `json:"fence,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Message  string `json:"message,omitempty"`
	Next     string `json:"next,omitempty"`
	Count    int64  `json:"count,omitempty"`
	// Armed marks the FIRED and STARTED of a run armed ahead of its fire
	// time (internal/eventview): the page keeps the stream's order and
	// says why this row's time is later than the rows above it.
	Armed bool `json:"armed,omitempty"`
}

func toLive(ev *taskdv1.Event) liveEvent {
	l := liveEvent{
		Type: strings.TrimPrefix(ev.GetType().String(), "EVENT_TYPE_"), Time: ev.GetTime().AsTime().UTC().Format(time.RFC3339Nano),
		Node: ev.GetNode(), Identity: ev.GetIdentity(), TaskID: ev.GetTaskId(), Kind: ev.GetKind(), Run: ev.GetRunNumber(),
		Attempt: ev.GetAttempt(), Fence: ev.GetFence(), Message: ev.GetMessage(), Count: ev.GetCount(),
		Armed: eventview.Armed(ev),
	}
	if ev.GetOutcome() != taskdv1.Outcome_OUTCOME_UNSPECIFIED {
		l.Outcome = strings.TrimPrefix(ev.GetOutcome().String(), "OUTCOME_")
	}
	if ev.GetNext() != nil {
		l.Next = ev.GetNext().AsTime().UTC().Format(time.RFC3339Nano)
	}
	return l
}

// eventStream serves the cluster's task events matching the filter as
// server-sent events, from the WatchEvents stream. Each event's id is its
// cursor, so a browser that reconnects (sending Last-Event-ID) resumes
// after the last event it got. A viewer that takes no write for
// viewerWriteTimeout is cut off; one that the API ended for falling behind
// (RESOURCE_EXHAUSTED) gets a "resume" event whose id is the cursor to go
// on from, and the stream ends, so the browser reconnects from there. Any
// other error of the API after the stream began is sent as an "apierror"
// event; the stream ends with the viewer, with the console, or at its life
// (the browser then reconnects).
func (c *Console) eventStream(w http.ResponseWriter, r *http.Request) {
	f, err := parseEventFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		c.fail(w, r, &httpError{status: http.StatusInternalServerError, msg: "this HTTP connection cannot stream"})
		return
	}
	// WatchEvents reports a refusal only with its first message, after the
	// response has begun; ListTasks of the same identity (or of the whole
	// cluster) and kind needs the same verb and scope and checks the
	// filter by the same rules, so it answers first, with the HTTP status
	// the refusal means.
	pctx, pcancel := c.call(r)
	_, _, err = c.api.ListPage(pctx, client.ListFilter{Identity: f.identity, Kind: f.kind, PageSize: 1}, "")
	pcancel()
	if !c.answered(w, r, "WatchEvents", err) {
		return
	}

	ctx, cancel := context.WithTimeout(withToken(r.Context(), r), streamLife)
	defer cancel()
	defer context.AfterFunc(c.stopping, cancel)()
	stream, err := c.api.Watch(ctx, f.watch(r.Header.Get("Last-Event-ID")))
	if !c.answered(w, r, "WatchEvents", err) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	// send writes one piece of the stream within the write timeout; false
	// means the viewer is not taking it (or is gone): the stream ends.
	send := func(format string, args ...any) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(viewerWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	if !send("retry: 2000\n: streaming task events\n\n") {
		return
	}

	// Recv blocks, so it runs on a goroutine of this request; cancel ends
	// it, and the handler waits for it before returning. It reads at most
	// one response ahead of the writes.
	type recv struct {
		evs []client.Event
		err error
	}
	got := make(chan recv)
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			evs, err := stream.Recv()
			select {
			case got <- recv{evs, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { cancel(); <-recvDone }()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !send(": heartbeat\n\n") {
				return
			}
		case g := <-got:
			if g.err != nil {
				if ctx.Err() != nil {
					return
				}
				if cursor, ok := resume.Cursor(g.err); ok && status.Code(g.err) == codes.ResourceExhausted {
					// The browser reconnects with this id as Last-Event-ID.
					b, _ := json.Marshal(map[string]string{"cursor": cursor, "message": status.Convert(g.err).Message()})
					send("id: %s\nevent: resume\ndata: %s\n\n", cursor, b)
					return
				}
				he := apiError("WatchEvents", g.err)
				b, _ := json.Marshal(map[string]string{"code": he.code, "message": he.msg})
				send("event: apierror\ndata: %s\n\n", b)
				return
			}
			var sb strings.Builder
			for _, ev := range g.evs {
				b, err := json.Marshal(toLive(ev.Proto))
				if err != nil {
					continue
				}
				fmt.Fprintf(&sb, "id: %s\nevent: task\ndata: %s\n\n", ev.Cursor, b)
			}
			if !send("%s", sb.String()) {
				return
			}
		}
	}
}
