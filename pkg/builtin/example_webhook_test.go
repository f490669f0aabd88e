//go:build unix

package builtin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/taskd/taskd/pkg/builtin"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// POST each run's payload to a URL: the X-Taskd-* headers describe the
// run, and a 2xx response's body is the run's message.
func ExampleNewWebhook() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "stored %q for %s, run %s", body, r.Header.Get("X-Taskd-Identity"), r.Header.Get("X-Taskd-Run"))
	}))
	defer receiver.Close()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"notify": builtin.NewWebhook(receiver.URL+"/hooks/notify", builtin.WebhookOptions{}),
		},
	})
	defer stop()

	task := runOnce(ctx, node, "carol", "notify", "order shipped", 1)
	fmt.Println(task.State, task.LastRun.Outcome)
	fmt.Println(task.LastRun.Message)
	// Output:
	// TASK_STATE_COMPLETED OUTCOME_SUCCESS
	// stored "order shipped" for carol, run 1
}

// The response decides a webhook run's outcome: 429 and 5xx are failed
// attempts that are retried, another 4xx fails without a retry, and an
// X-Taskd-Outcome header of cancel (or snooze) wins over the status.
func ExampleNewWebhook_statuses() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var overloaded atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/overloaded": // busy on the first call only
			if overloaded.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
		case "/missing":
			http.NotFound(w, r)
		case "/gone":
			w.Header().Set("X-Taskd-Outcome", "cancel")
			fmt.Fprint(w, "account closed")
		}
	}))
	defer receiver.Close()
	handlers := map[string]taskservice.Handler{}
	kinds := []string{"overloaded", "missing", "gone"}
	for _, k := range kinds {
		handlers[k] = builtin.NewWebhook(receiver.URL+"/"+k, builtin.WebhookOptions{})
	}
	node, stop := tst.ExampleNode(taskservice.Config{Handlers: handlers})
	defer stop()

	for _, kind := range kinds {
		task := runOnce(ctx, node, "dave", kind, "", 3)
		fmt.Println(kind, task.State, "runs:", task.RunCount, task.LastRun.Outcome)
	}
	// Output:
	// overloaded TASK_STATE_COMPLETED runs: 2 OUTCOME_SUCCESS
	// missing TASK_STATE_DEAD runs: 1 OUTCOME_ERROR
	// gone TASK_STATE_CANCELED runs: 1 OUTCOME_CANCELED
}
