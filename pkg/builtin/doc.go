// Package builtin provides the handler kinds built into the taskd binary:
// --exec KIND=COMMAND runs a shell command per run, and --webhook KIND=URL
// POSTs each run's payload to a URL.
//
// Both hand the run's identity, task, kind, run number, fence, node and
// attempt to the work they start (as TASKD_* environment variables or
// X-Taskd-* headers), so that a downstream system can reject a stale
// duplicate by its fence. Both map the result to a taskservice outcome
// (outcomes.go): a success returns nil and keeps at most 64 KiB of output
// as the run's message; any failure (a non-zero exit or a death by a
// signal, HTTP 429 or 5xx, a connection error, a timeout, a node stop) is a
// failed attempt retried by the task's policy, except what the other side
// says must not be: an exit code of its own (ExitPermanent, ExitCancel,
// ExitSnooze), another 4xx status, or an X-Taskd-Outcome header.
//
// An exec command runs in a process group of its own that no process of it
// outlives: not the run, and not the node, even one killed by SIGKILL (see
// NewExec).
package builtin
