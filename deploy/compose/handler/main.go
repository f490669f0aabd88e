// Command handler is the compose cluster's demo handler: a webhook service
// that taskd nodes call with --webhook KIND=http://handler:8080/KIND. The
// taskd image has no shell, so --exec handlers (which run /bin/sh -c) cannot
// run in it; a handler in its own container, reached over HTTP, can be
// written in anything.
//
// Every request is one run: it is logged (identity, task, run, fence, node,
// attempt, payload) and answered by path:
//
//	/demo   200 "hello IDENTITY: run N, fence F, payload P" (the run's message)
//	/fail   500, a retryable failure (retried by the task's retry policy)
//	/reject 400, a permanent failure
//
// Any other path is 404, a permanent failure.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "HTTP address")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /demo", func(w http.ResponseWriter, r *http.Request) {
		payload := logRun(r)
		fmt.Fprintf(w, "hello %s: run %s, fence %s, payload %s",
			r.Header.Get("X-Taskd-Identity"), r.Header.Get("X-Taskd-Run"), r.Header.Get("X-Taskd-Fence"), payload)
	})
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, r *http.Request) {
		logRun(r)
		http.Error(w, "demo handler: failing on purpose (retryable)", http.StatusInternalServerError)
	})
	mux.HandleFunc("POST /reject", func(w http.ResponseWriter, r *http.Request) {
		logRun(r)
		http.Error(w, "demo handler: rejecting on purpose (permanent)", http.StatusBadRequest)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("demo handler listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}

// logRun logs the run a request stands for and returns its payload (at most
// 64 KiB are read).
func logRun(r *http.Request) string {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	log.Printf("%s identity=%s task=%s run=%s fence=%s node=%s attempt=%s fire_time=%s payload=%q",
		r.URL.Path, r.Header.Get("X-Taskd-Identity"), r.Header.Get("X-Taskd-Task-Id"), r.Header.Get("X-Taskd-Run"),
		r.Header.Get("X-Taskd-Fence"), r.Header.Get("X-Taskd-Node"), r.Header.Get("X-Taskd-Attempt"),
		r.Header.Get("X-Taskd-Fire-Time"), body)
	return string(body)
}
