package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// clusterData is the cluster page.
type clusterData struct {
	Nodes   []nodeRow
	Pauses  []*taskdv1.Pause
	Charts  []svgChart
	Since   time.Time // when this console began counting
	FeedErr string    // why other nodes' runs are missing from the chart
}

// nodeRow is one node with its runs in the chart's last hour.
type nodeRow struct {
	*taskdv1.Node
	Self     bool
	RunsHour int
}

func (c *Console) clusterPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.call(r)
	defer cancel()
	nodes, err := c.api.Nodes(ctx)
	if !c.answered(w, r, "ListNodes", err) {
		return
	}
	pauses, err := c.api.Pauses(ctx)
	if !c.answered(w, r, "ListPauses", err) {
		return
	}
	snap := c.chart.snapshot()
	runs := map[string]int{}
	d := clusterData{Since: c.chart.since}
	for _, p := range pauses {
		d.Pauses = append(d.Pauses, p.Proto)
	}
	for _, s := range snap {
		runs[s.Node] = s.Runs
	}
	charted := map[string]bool{}
	for _, n := range nodes {
		d.Nodes = append(d.Nodes, nodeRow{Node: n.Proto, Self: n.Name == c.node, RunsHour: runs[n.Name]})
	}
	for _, s := range snap {
		charted[s.Node] = true
		d.Charts = append(d.Charts, draw(s))
	}
	// Every registered node gets a chart, empty until it runs something.
	for _, n := range nodes {
		if !charted[n.Name] {
			d.Charts = append(d.Charts, draw(c.chart.empty(n.Name)))
		}
	}
	sort.Slice(d.Charts, func(i, j int) bool { return d.Charts[i].Node < d.Charts[j].Node })
	if err := c.feedError(); err != nil {
		d.FeedErr = apiError("WatchEvents", err).msg
	}
	c.render(w, r, http.StatusOK, "cluster", "Cluster", d)
}

// identitiesData is the identities page.
type identitiesData struct {
	Query    string
	Found    *taskdv1.Identity
	Nodes    []*taskdv1.Node // RUNNING nodes, the targets of a move
	List     []*taskdv1.Identity
	Scanned  int    // tasks read to find the listed identities
	Next     string // page token to go on scanning
	Token    string // the page token this page began at
	Complete bool   // the scan read every task
}

// identityScan bounds how many tasks one identities page reads to list
// identities: the API has no list of identities, so the list is derived
// from the cluster's tasks (an identity without tasks is not listed; the
// search box finds any).
const (
	identityScan     = 2000
	identityListMost = 100
)

func (c *Console) identitiesPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := identitiesData{Query: strings.TrimSpace(q.Get("identity")), Token: q.Get("page_token")}
	ctx, cancel := c.call(r)
	defer cancel()
	nodes, err := c.api.Nodes(ctx)
	if !c.answered(w, r, "ListNodes", err) {
		return
	}
	for _, n := range nodes {
		if n.Proto.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING {
			d.Nodes = append(d.Nodes, n.Proto)
		}
	}
	if d.Query != "" {
		found, err := c.api.Identity(ctx, d.Query)
		if !c.answered(w, r, "GetIdentity "+d.Query, err) {
			return
		}
		d.Found = found.Proto
		c.render(w, r, http.StatusOK, "identities", "Identity "+d.Query, d)
		return
	}
	// Tasks come by identity, so the distinct identities of a scan are in
	// order and a page token of the scan continues the list.
	token := d.Token
	var ids []string
	for d.Scanned < identityScan && len(ids) < identityListMost {
		tasks, next, err := c.api.ListPage(ctx, client.ListFilter{PageSize: 500}, token)
		if err != nil {
			if token == d.Token && token != "" && code(err) == "InvalidArgument" {
				c.fail(w, r, badInput("page_token", "is not a page token of this list"))
				return
			}
			c.fail(w, r, apiError("ListTasks", err))
			return
		}
		for _, t := range tasks {
			d.Scanned++
			if id := t.Spec.Identity; len(ids) == 0 || ids[len(ids)-1] != id {
				ids = append(ids, id)
			}
		}
		token = next
		if token == "" {
			d.Complete = true
			break
		}
	}
	d.Next = token
	for _, id := range ids {
		got, err := c.api.Identity(ctx, id)
		if !c.answered(w, r, "GetIdentity "+id, err) {
			return
		}
		d.List = append(d.List, got.Proto)
	}
	c.render(w, r, http.StatusOK, "identities", "Identities", d)
}

// tasksData is the tasks page.
type tasksData struct {
	Filter   taskFilter
	Tasks    []*taskdv1.Task
	Next     string // URL of the next page, "" on the last
	First    string // URL of the first page, "" on it
	Nodes    []string
	PageSize int
}

// taskFilter is the tasks page's form, as given.
type taskFilter struct {
	Identity, State, Kind, Label, Node, PageToken string
}

// query is the filter as URL parameters, without the page token.
func (f taskFilter) query() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"identity": f.Identity, "state": f.State, "kind": f.Kind, "label": f.Label, "node": f.Node} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// request checks the filter and makes the client's filter of the list
// (the page token goes with it), naming the field that is wrong.
func (f taskFilter) request(size int) (client.ListFilter, error) {
	lf := client.ListFilter{Identity: f.Identity, Kind: f.Kind, Node: f.Node, PageSize: int32(size)}
	if f.State != "" {
		for s := range strings.SplitSeq(f.State, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			v, ok := taskdv1.TaskState_value["TASK_STATE_"+strings.TrimPrefix(s, "TASK_STATE_")]
			if !ok || v == 0 {
				return lf, badInput("state", "%q is not a task state (%s)", s, strings.Join(stateNames(), ", "))
			}
			lf.States = append(lf.States, client.State(strings.TrimPrefix(taskdv1.TaskState(v).String(), "TASK_STATE_")))
		}
	}
	if f.Label != "" {
		lf.Labels = map[string]string{}
		for kv := range strings.SplitSeq(f.Label, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return lf, badInput("label", "%q is not key=value (several: k1=v1,k2=v2)", kv)
			}
			lf.Labels[k] = v
		}
	}
	return lf, nil
}

// tasksPageSize is the tasks page's page size.
const tasksPageSize = 50

func (c *Console) tasksPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := taskFilter{
		Identity: strings.TrimSpace(q.Get("identity")), State: q.Get("state"), Kind: strings.TrimSpace(q.Get("kind")),
		Label: strings.TrimSpace(q.Get("label")), Node: strings.TrimSpace(q.Get("node")), PageToken: q.Get("page_token"),
	}
	size := tasksPageSize
	if s := q.Get("page_size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			c.fail(w, r, badInput("page_size", "%q is not a number from 1 to 1000", s))
			return
		}
		size = n
	}
	lf, err := f.request(size)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ctx, cancel := c.call(r)
	defer cancel()
	tasks, next, err := c.api.ListPage(ctx, lf, f.PageToken)
	if err != nil {
		if f.PageToken != "" && code(err) == "InvalidArgument" && strings.Contains(err.Error(), "page_token") {
			c.fail(w, r, badInput("page_token", "is not a page token of this list (start again from the first page)"))
			return
		}
		c.fail(w, r, apiError("ListTasks", err))
		return
	}
	d := tasksData{Filter: f, PageSize: size}
	for _, t := range tasks {
		d.Tasks = append(d.Tasks, t.Proto)
	}
	if next != "" {
		v := f.query()
		v.Set("page_token", next)
		if size != tasksPageSize {
			v.Set("page_size", strconv.Itoa(size))
		}
		d.Next = Prefix + "tasks?" + v.Encode()
	}
	if f.PageToken != "" {
		d.First = Prefix + "tasks?" + f.query().Encode()
	}
	if nodes, err := c.api.Nodes(ctx); err == nil {
		for _, n := range nodes {
			d.Nodes = append(d.Nodes, n.Name)
		}
	}
	c.render(w, r, http.StatusOK, "tasks", "Tasks", d)
}

// taskData is the task page.
type taskData struct {
	Task *taskdv1.Task
	Runs []*taskdv1.Run
}

func (c *Console) taskPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	identity, id := q.Get("identity"), strings.TrimSpace(q.Get("id"))
	if identity == "" {
		c.fail(w, r, badInput("identity", "is required"))
		return
	}
	if id == "" {
		c.fail(w, r, badInput("id", "is required"))
		return
	}
	ctx, cancel := c.call(r)
	defer cancel()
	task, err := c.api.Get(ctx, identity, id)
	if !c.answered(w, r, "GetTask", err) {
		return
	}
	runs, err := c.api.Runs(ctx, identity, id)
	if !c.answered(w, r, "ListRuns", err) {
		return
	}
	d := taskData{Task: task.Proto}
	for _, run := range runs {
		d.Runs = append(d.Runs, run.Proto)
	}
	c.render(w, r, http.StatusOK, "task", "Task "+id, d)
}

// eventsData is the events page's filter.
type eventsData struct {
	Identity, Kind, Type string
	Stream               string // URL of the event stream
}

func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseEventFilter(q)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v := url.Values{}
	for k, s := range map[string]string{"identity": f.identity, "kind": f.kind, "type": q.Get("type")} {
		if s != "" {
			v.Set(k, s)
		}
	}
	d := eventsData{Identity: f.identity, Kind: f.kind, Type: q.Get("type"), Stream: Prefix + "events/stream?" + v.Encode()}
	c.render(w, r, http.StatusOK, "events", "Live events", d)
}

// tokenPage shows the token form.
func (c *Console) tokenPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "token", "Token", nil)
}

// setToken stores the token form's token in the cookie, or clears it.
func (c *Console) setToken(w http.ResponseWriter, r *http.Request) {
	if err := c.checkPost(r); err != nil {
		c.fail(w, r, err)
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	ck := &http.Cookie{Name: tokenCookie, Path: Prefix, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
	done := "token cleared"
	if r.PostFormValue("clear") == "" {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n;,") {
			c.fail(w, r, badInput("token", "give a bearer token ID.SECRET, without spaces"))
			return
		}
		ck.Value = tok
		done = "token " + tokenID(tok) + " set; the API checks it on every call"
	} else {
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
	http.Redirect(w, r, Prefix+"?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
