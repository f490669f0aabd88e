package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// chromiumNames are the browser binaries the console's browser test looks
// for, in order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// findChromium returns the path of a Chromium binary, or "".
func findChromium() string {
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserStep bounds one step of the browser test: a page load, a click
// and the wait for its effect. Generous: it is only reached when failing.
const browserStep = 30 * time.Second

// screenshotDir is where the browser test writes its PNGs: $TASKD_SCREENSHOTS
// when set, else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("TASKD_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("TASKD_SCREENSHOTS: %v", err)
		}
		return d
	}
	return t.TempDir()
}

// TestConsoleBrowser drives the web console of a two-node cluster in
// headless Chromium: every page shows what the API holds, cancel, run-now
// and move-identity done by clicking take effect (checked through the gRPC
// API), and an event appears live on the events page. It saves a
// screenshot of each page; with TASKD_UPDATE_SCREENSHOTS=1 it also
// refreshes docs/console/*.png.
func TestConsoleBrowser(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		skipUnlessRequired(t, "chromium", "no Chromium binary found (looked for %s in PATH): the web console's browser test needs one", strings.Join(chromiumNames, ", "))
	}
	cl := newCluster(t, "/console/")
	// Kind "later" is declared for remote workers, none of which connects:
	// its runs wait for one.
	withLater := func(name string) nodeOptions { return cl.opts(name, "--kinds", "later") }
	a := startNode(t, withLater("node-a"))
	b := startNode(t, withLater("node-b"))
	api := a.Client()

	// alice runs every second, so the pages have history, the chart has
	// bars, and the events page has a steady stream.
	alice := schedule(t, api, &taskdv1.TaskSpec{Identity: "alice", Kind: "rec", Triggers: every(time.Second),
		Labels: map[string]string{"team": "core"}, Payload: []byte("hello from alice")})
	bob := schedule(t, api, &taskdv1.TaskSpec{Identity: "bob", Kind: "rec", Triggers: onceAfter(0)})
	carol := schedule(t, api, &taskdv1.TaskSpec{Identity: "carol", Kind: "rec", Triggers: every(time.Hour)})
	dave := schedule(t, api, &taskdv1.TaskSpec{Identity: "dave", Kind: "rec", Triggers: every(time.Hour)})
	// erin runs every second too, and moves to node-b: node-a's chart
	// then shows node-b's runs, read from the cluster's event stream.
	schedule(t, api, &taskdv1.TaskSpec{Identity: "erin", Kind: "rec", Triggers: every(time.Second)})
	waitTaskState(t, api, "bob", bob.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)

	dir := screenshotDir(t)
	var docs string
	if os.Getenv("TASKD_UPDATE_SCREENSHOTS") == "1" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		docs = filepath.Join(root, "docs", "console")
		if err := os.MkdirAll(docs, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")))...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	// The browser and its tab start with the first action, bound to the
	// context it runs in: start them on the tab's own context, not on a
	// step's (which ends with the step).
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start Chromium (%s): %v", chromium, err)
	}
	ui := "http://" + a.httpAddr + "/ui/"

	// step runs actions within browserStep, failing the test with what.
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, browserStep)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// shoot saves a full-page screenshot as name.png.
	shoot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, browserStep)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		for _, d := range []string{dir, docs} {
			if d == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
		}
	}
	// evaluate returns a JavaScript expression's value in the page.
	evaluate := func(what, expr string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, browserStep)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	row := func(attr, v string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`tr[data-%s=%q]`, attr, v)) }

	// Identities: derived from the cluster's tasks.
	step("identities page", chromedp.Navigate(ui+"identities"),
		chromedp.WaitVisible(row("identity", "alice")), chromedp.WaitVisible(row("identity", "bob")),
		chromedp.WaitVisible(row("identity", "erin")))
	shoot("identities")

	// Tasks: the whole cluster, then filtered by state through the form.
	step("tasks page", chromedp.Navigate(ui+"tasks"),
		chromedp.WaitVisible(row("task", alice.GetId())), chromedp.WaitVisible(row("task", bob.GetId())),
		chromedp.WaitVisible(row("task", carol.GetId())))
	shoot("tasks")
	step("filter tasks by state", chromedp.SetValue(chromedp.CSS(`select[name="state"]`), "COMPLETED"),
		chromedp.Click(chromedp.CSS(`form.filters button`)), chromedp.WaitReady(chromedp.CSS(`select[name="state"] option[selected]`)),
		chromedp.WaitVisible(row("task", bob.GetId())))
	if evaluate("filtered list", fmt.Sprintf(`document.querySelector('tr[data-task=%q]') !== null`, alice.GetId())) {
		t.Fatal("the COMPLETED filter shows alice's SCHEDULED task")
	}

	// A task: its runs, with the script's local times.
	eventually(t, waitLong, "alice's task has runs", func() error {
		if n := len(mustListRuns(t, api, "alice", alice.GetId())); n < 2 {
			return fmt.Errorf("%d runs", n)
		}
		return nil
	})
	step("task page", chromedp.Navigate(ui+"task?identity=alice&id="+alice.GetId()),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="2"]`)), chromedp.WaitVisible(chromedp.CSS(`time[data-utc]`)))
	shoot("task")

	// Run now: one click, no confirmation; a manual run follows.
	step("run now", chromedp.Navigate(ui+"task?identity=dave&id="+dave.GetId()), chromedp.WaitVisible(chromedp.ID("run-now")),
		chromedp.Click(chromedp.ID("run-now")), chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	eventually(t, waitLong, "dave's manual run", func() error {
		runs, err := listRuns(api, "dave", dave.GetId())
		if err != nil {
			return err
		}
		if len(runs) != 1 || !runs[0].GetManual() || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
			return fmt.Errorf("runs:%s", describeRuns(runs))
		}
		return nil
	})

	// Cancel: a confirmation step, then the task is CANCELED.
	step("cancel asks first", chromedp.Navigate(ui+"task?identity=carol&id="+carol.GetId()), chromedp.WaitVisible(chromedp.ID("cancel")),
		chromedp.Click(chromedp.ID("cancel")), chromedp.WaitVisible(chromedp.ID("confirm")))
	if task, err := getTask(api, "carol", carol.GetId()); err != nil || task.GetState() != taskdv1.TaskState_TASK_STATE_SCHEDULED {
		t.Fatalf("before confirmation: carol's task %v, %v; want SCHEDULED", task.GetState(), err)
	}
	step("confirm cancel", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.CSS(`#task-state.st-canceled`)))
	if task, err := getTask(api, "carol", carol.GetId()); err != nil || task.GetState() != taskdv1.TaskState_TASK_STATE_CANCELED {
		t.Fatalf("after confirmation: carol's task %v, %v; want CANCELED", task.GetState(), err)
	}

	// Move: erin to the node that does not own it, after confirmation.
	erin, err := getIdentity(api, "erin")
	if err != nil {
		t.Fatalf("GetIdentity erin: %v", err)
	}
	to := "node-b"
	if erin.GetNode() == "node-b" {
		to = "node-a"
	}
	step("move asks first", chromedp.Navigate(ui+"identities?identity=erin"), chromedp.WaitVisible(chromedp.ID("move-button")),
		chromedp.SetValue(chromedp.ID("move-node"), to), chromedp.Click(chromedp.ID("move-button")), chromedp.WaitVisible(chromedp.ID("confirm")))
	step("confirm move", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.CSS(`p.flash`)),
		chromedp.WaitVisible(chromedp.CSS(`dd.owner a[href="/ui/tasks?node=`+to+`"]`)))
	moved, err := getIdentity(b.Client(), "erin")
	if err != nil || moved.GetNode() != to || moved.GetEpoch() <= erin.GetEpoch() {
		t.Fatalf("after the move erin is %v (%v); want on %s with an epoch above %d", moved, err, to, erin.GetEpoch())
	}

	// Live events: alice's runs show the stream is live; then a task
	// scheduled now appears without a reload.
	step("events page", chromedp.Navigate(ui+"events"), chromedp.WaitVisible(chromedp.CSS(`#events tbody tr[data-type="SUCCEEDED"]`)))
	frank := schedule(t, api, &taskdv1.TaskSpec{Identity: "frank", Kind: "rec", Triggers: onceAfter(0)})
	step("frank's events appear live", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#events tbody tr[data-task=%q][data-type="SUCCEEDED"]`, frank.GetId()))))
	shoot("events")

	// Cluster: both nodes, and the chart: the runs of alice's and erin's
	// owners, with the fire lag of node-a's own runs (the chart is drawn
	// when the page loads, so it is loaded again until they show).
	want := []string{`figure.chart[data-node="` + to + `"] rect.bar`}
	if owner, err := getIdentity(api, "alice"); err != nil {
		t.Fatalf("GetIdentity alice: %v", err)
	} else {
		want = append(want, `figure.chart[data-node="`+owner.GetNode()+`"] rect.bar`)
		if owner.GetNode() == "node-a" || to == "node-a" {
			want = append(want, `figure.chart[data-node="node-a"] circle.p99`)
		}
	}
	cond := "document.querySelector('tr[data-node=\"node-a\"]') && document.querySelector('tr[data-node=\"node-b\"]')"
	for _, sel := range want {
		cond += fmt.Sprintf(" && document.querySelector(%q)", sel)
	}
	eventually(t, waitLong, "the cluster page shows both nodes and their charts", func() error {
		step("cluster page", chromedp.Navigate(ui), chromedp.WaitReady(chromedp.ID("nodes")))
		if !evaluate("cluster page", "!!("+cond+")") {
			return fmt.Errorf("not all of %v", want)
		}
		return nil
	})
	shoot("cluster")

	// A run waiting for a worker: a badge in the task list and on the
	// task's page, which says why, on the console of the identity's owner
	// (the node that knows).
	gina := schedule(t, api, &taskdv1.TaskSpec{Identity: "gina", Kind: "later", Triggers: onceAfter(0)})
	owner, err := getIdentity(api, "gina")
	if err != nil {
		t.Fatalf("GetIdentity gina: %v", err)
	}
	web := a
	if owner.GetNode() == "node-b" {
		web = b
	}
	eventually(t, waitLong, "gina's run waits for a worker", func() error {
		task, err := getTask(web.Client(), "gina", gina.GetId())
		if err != nil {
			return err
		}
		if task.GetWaiting() != "worker" {
			return fmt.Errorf("state %s, waiting %q", task.GetState(), task.GetWaiting())
		}
		return nil
	})
	ownerUI := "http://" + web.httpAddr + "/ui/"
	step("a waiting task in the list", chromedp.Navigate(ownerUI+"tasks?identity=gina"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-task=%q] .tag.waiting`, gina.GetId()))))
	step("a waiting task's page", chromedp.Navigate(ownerUI+"task?identity=gina&id="+gina.GetId()),
		chromedp.WaitVisible(chromedp.ID("task-waiting")), chromedp.WaitVisible(chromedp.ID("task-waiting-reason")))
	reason := fmt.Sprintf(`no worker of kind "later" (declared by --kinds) has connected to node %s`, owner.GetNode())
	if !evaluate("the waiting reason", fmt.Sprintf(`document.getElementById('task-waiting-reason').textContent.includes(%q)`, reason)) {
		t.Fatalf("gina's task page does not say %q", reason)
	}
	shoot("task-waiting")
	t.Logf("screenshots in %s", dir)
}
