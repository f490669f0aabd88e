package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// pageNames are the templates of templates/, each drawn inside layout.html.
var pageNames = []string{"cluster", "identities", "tasks", "task", "events", "confirm", "token", "error"}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// view is what the layout draws around a page's content.
type view struct {
	Title   string
	Nav     string // the nav entry to mark
	Node    string
	TokenID string
	Flash   string
	CSRF    string // the viewer's CSRF token, for the forms' csrf field
	Now     time.Time
	Data    any
}

// render draws page with data, answering status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	v := view{Title: title, Nav: page, Node: c.node, TokenID: tokenID(bearer(r)), Flash: r.URL.Query().Get("done"), Now: c.now(), Data: data,
		CSRF: c.csrfToken(w, r)}
	var buf bytes.Buffer
	if err := c.pages[page].Execute(&buf, v); err != nil {
		c.log.Error("console page failed to render", "page", page, "error", err)
		http.Error(w, "the page failed to render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail shows err on the error page with its HTTP status.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	he := apiError("error", err)
	c.render(w, r, he.status, "error", http.StatusText(he.status), he)
}

// answered reports whether the API call named what answered (err nil);
// if not, it fails the page with the call's error.
func (c *Console) answered(w http.ResponseWriter, r *http.Request, what string, err error) bool {
	if err != nil {
		c.fail(w, r, apiError(what, err))
		return false
	}
	return true
}

// funcs are the template helpers.
var funcs = template.FuncMap{
	"when":       when,
	"stateClass": stateClass,
	"state":      func(s taskdv1.TaskState) string { return strings.TrimPrefix(s.String(), "TASK_STATE_") },
	"final": func(s taskdv1.TaskState) bool {
		return s == taskdv1.TaskState_TASK_STATE_COMPLETED || s == taskdv1.TaskState_TASK_STATE_DEAD || s == taskdv1.TaskState_TASK_STATE_CANCELED
	},
	"nodeState":  func(s taskdv1.NodeState) string { return strings.TrimPrefix(s.String(), "NODE_STATE_") },
	"outcome":    func(o taskdv1.Outcome) string { return strings.TrimPrefix(o.String(), "OUTCOME_") },
	"scope":      func(s taskdv1.Scope) string { return strings.TrimPrefix(s.String(), "SCOPE_") },
	"misfire":    misfireInForce,
	"retries":    retries,
	"lease":      leaseLeft,
	"bytes":      showBytes,
	"trigger":    describeTrigger,
	"short":      func(s string) string { return shorten(s, 12) },
	"clip":       func(s string) string { return shorten(s, 120) },
	"runTime":    runTime,
	"join":       strings.Join,
	"eventTypes": eventTypeNames,
	"states":     stateNames,
}

// when shows a time for people: absolute in UTC (a script turns it into
// the viewer's zone) and relative to now; "-" when unset.
func when(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case *timestamppb.Timestamp:
		if x == nil {
			return "-"
		}
		t = x.AsTime()
	case time.Time:
		t = x
	}
	if t.IsZero() {
		return "-"
	}
	rfc := t.UTC().Format(time.RFC3339Nano)
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s</time> <span class="rel">(%s)</span>`,
		template.HTMLEscapeString(rfc), t.UTC().Format("2006-01-02 15:04:05 UTC"), relative(t, time.Now())))
}

// relative says how far t is from now: "3 s ago", "in 2 min".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	future := d > 0
	if !future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%d d", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// stateClass is the CSS class of a task state, node state or outcome.
func stateClass(v fmt.Stringer) string {
	s := v.String()
	for _, p := range []string{"TASK_STATE_", "NODE_STATE_", "OUTCOME_", "EVENT_TYPE_"} {
		s = strings.TrimPrefix(s, p)
	}
	return "st-" + strings.ToLower(s)
}

// leaseLeft is a node's lease time left; "-" when unknown (expired).
func leaseLeft(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return d.AsDuration().String()
}

// runTime is how long a run took; "-" while it runs.
func runTime(r *taskdv1.Run) string {
	if r.GetStartedAt() == nil || r.GetEndedAt() == nil {
		return "-"
	}
	return roundLag(r.GetEndedAt().AsTime().Sub(r.GetStartedAt().AsTime())).String()
}

// showBytes shows a payload or data: as text when it is printable UTF-8,
// else as hex; long ones are cut.
func showBytes(b []byte) string {
	const most = 4096
	if len(b) == 0 {
		return "(empty)"
	}
	cut := ""
	if len(b) > most {
		b, cut = b[:most], fmt.Sprintf(" … (%d bytes in all)", len(b))
	}
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' }) {
		return string(b) + cut
	}
	return fmt.Sprintf("hex %x", b) + cut
}

// describeTrigger is one line about a trigger.
func describeTrigger(t *taskdv1.Trigger) string {
	var s string
	switch k := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		s = "once"
		if k.Once.GetAt() != nil {
			s += " at " + k.Once.GetAt().AsTime().UTC().Format(time.RFC3339)
		}
	case *taskdv1.Trigger_Periodic:
		p := k.Periodic
		s = "every " + p.GetInterval().AsDuration().String()
		if p.GetStart() != nil {
			s += " from " + p.GetStart().AsTime().UTC().Format(time.RFC3339)
		}
		if p.GetEnd() != nil {
			s += " until " + p.GetEnd().AsTime().UTC().Format(time.RFC3339)
		}
		if p.GetCount() > 0 {
			s += fmt.Sprintf(", %d times", p.GetCount())
		}
	case *taskdv1.Trigger_Cron:
		c := k.Cron
		tz := c.GetTimeZone()
		if tz == "" {
			tz = "UTC"
		}
		s = fmt.Sprintf("cron %q in %s", c.GetExpression(), tz)
		if c.GetStart() != nil {
			s += " from " + c.GetStart().AsTime().UTC().Format(time.RFC3339)
		}
		if c.GetEnd() != nil {
			s += " until " + c.GetEnd().AsTime().UTC().Format(time.RFC3339)
		}
	case *taskdv1.Trigger_OnStartup:
		s = "on start-up of the dispatching node"
	default:
		s = "unknown trigger"
	}
	if t.GetJitter().AsDuration() > 0 {
		s += ", jitter up to " + t.GetJitter().AsDuration().String()
	}
	if t.GetMisfire() != taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED {
		s += ", misfire " + strings.TrimPrefix(t.GetMisfire().String(), "MISFIRE_POLICY_")
	}
	if t.GetName() != "" {
		s = t.GetName() + ": " + s
	}
	return s
}

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// eventTypeNames are the event types without prefix, in enum order.
func eventTypeNames() []string { return enumNames(taskdv1.EventType_name, "EVENT_TYPE_") }

// stateNames are the task states without prefix, in enum order.
func stateNames() []string { return enumNames(taskdv1.TaskState_name, "TASK_STATE_") }

// enumNames are the names of an enum's values from 1 on, in order, without
// prefix: names is the enum's value-to-name map.
func enumNames(names map[int32]string, prefix string) []string {
	var out []string
	for i := int32(1); ; i++ {
		n, ok := names[i]
		if !ok {
			return out
		}
		out = append(out, strings.TrimPrefix(n, prefix))
	}
}
