package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/taskd/taskd/pkg/client"
)

// actionSpec is one control action of the console: the API call it makes
// and whether it asks for confirmation first.
type actionSpec struct {
	title   string
	confirm bool // destructive: a confirmation step comes first
	needs   []string
	call    func(ctx context.Context, api *client.Client, f actionForm) (string, error)
}

// actionForm is the posted form of an action.
type actionForm struct {
	Op, Identity, TaskID, Node, Back string
}

// actions by the form's "op" field. Each is one API call, made with the
// viewer's token: the API's verbs (control for task and identity actions,
// admin for move and drain) decide.
var actions = map[string]actionSpec{
	"cancel": {title: "Cancel task", confirm: true, needs: []string{"identity", "task_id"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.Cancel(ctx, f.Identity, f.TaskID)
			return "task " + f.TaskID + " cancelled", err
		}},
	"delete": {title: "Delete task", confirm: true, needs: []string{"identity", "task_id"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			err := api.Delete(ctx, f.Identity, f.TaskID)
			return "task " + f.TaskID + " deleted", err
		}},
	"run-now": {title: "Run task now", needs: []string{"identity", "task_id"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.RunNow(ctx, f.Identity, f.TaskID)
			return "a manual run of task " + f.TaskID + " was requested", err
		}},
	"pause-task": {title: "Pause task", needs: []string{"identity", "task_id"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.Pause(ctx, f.Identity, f.TaskID)
			return "task " + f.TaskID + " paused", err
		}},
	"resume-task": {title: "Resume task", needs: []string{"identity", "task_id"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.Resume(ctx, f.Identity, f.TaskID)
			return "task " + f.TaskID + " resumed", err
		}},
	"pause-identity": {title: "Pause identity", needs: []string{"identity"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.PauseIdentity(ctx, f.Identity)
			return "identity " + f.Identity + " paused", err
		}},
	"resume-identity": {title: "Resume identity", needs: []string{"identity"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			err := api.ResumeIdentity(ctx, f.Identity)
			return "identity " + f.Identity + " resumed", err
		}},
	"move": {title: "Move identity", confirm: true, needs: []string{"identity", "node"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			moved, err := api.Move(ctx, f.Identity, f.Node)
			return fmt.Sprintf("identity %s moved to %s (epoch %d)", f.Identity, f.Node, moved.Epoch), err
		}},
	"drain": {title: "Drain node", confirm: true, needs: []string{"node"},
		call: func(ctx context.Context, api *client.Client, f actionForm) (string, error) {
			_, err := api.Drain(ctx, f.Node)
			return "node " + f.Node + " is draining", err
		}},
}

// confirmData is the confirmation step of a destructive action.
type confirmData struct {
	Title string
	Form  actionForm
	What  string
}

// action performs a posted action: after the confirmation step for a
// destructive one, it makes the API call and sends the viewer back with
// what happened.
func (c *Console) action(w http.ResponseWriter, r *http.Request) {
	if err := c.checkPost(r); err != nil {
		c.fail(w, r, err)
		return
	}
	f := actionForm{
		Op: r.PostFormValue("op"), Identity: r.PostFormValue("identity"), TaskID: strings.TrimSpace(r.PostFormValue("task_id")),
		Node: strings.TrimSpace(r.PostFormValue("node")), Back: r.PostFormValue("back"),
	}
	spec, ok := actions[f.Op]
	if !ok {
		c.fail(w, r, badInput("op", "%q is not an action", f.Op))
		return
	}
	for _, field := range spec.needs {
		if v := map[string]string{"identity": f.Identity, "task_id": f.TaskID, "node": f.Node}[field]; v == "" {
			c.fail(w, r, badInput(field, "is required by %s", f.Op))
			return
		}
	}
	if spec.confirm && r.PostFormValue("confirm") != "yes" {
		c.render(w, r, http.StatusOK, "confirm", spec.title, confirmData{Title: spec.title, Form: f, What: describeAction(f)})
		return
	}
	ctx, cancel := c.call(r)
	defer cancel()
	done, err := spec.call(ctx, c.api, f)
	if !c.answered(w, r, spec.title, err) {
		return
	}
	back := localPath(f.Back, Prefix)
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	http.Redirect(w, r, back+sep+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}

// describeAction says what a destructive action will do, for its
// confirmation step.
func describeAction(f actionForm) string {
	switch f.Op {
	case "cancel":
		return fmt.Sprintf("Cancel task %s of identity %s? Its future runs stop; a run in flight finishes but does not reschedule it. This cannot be undone.", f.TaskID, f.Identity)
	case "delete":
		return fmt.Sprintf("Delete task %s of identity %s? It goes at once with its run history, before its retention ends. This cannot be undone.", f.TaskID, f.Identity)
	case "move":
		return fmt.Sprintf("Move identity %s to node %s? Its epoch changes: a run in flight on the old owner cannot commit and is dropped, and the new owner takes its tasks.", f.Identity, f.Node)
	case "drain":
		return fmt.Sprintf("Drain node %s? It stops starting runs, waits for runs in flight, hands every identity to other RUNNING nodes, then stops.", f.Node)
	}
	return f.Op
}
