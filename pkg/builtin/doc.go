// Package builtin provides the handler kinds built into the taskd binary:
// --exec KIND=COMMAND runs a shell command per run, and --webhook KIND=URL
// POSTs each run's payload to a URL.
//
// Both hand the run's identity, task, kind, run number, fence, node and
// attempt to the work they start (as TASKD_* environment variables or
// X-Taskd-* headers), so that a downstream system can reject a stale
// duplicate by its fence. Both map the result to a taskservice outcome: a
// success returns nil and keeps at most 64 KiB of output as the run's
// message; a failure the other side asked to retry (exit code 75, HTTP 429
// or 5xx), a connection error, a timeout and a node stop are retryable;
// anything else is permanent.
//
// An exec command runs in a process group of its own that no process of it
// outlives: not the run, and not the node, even one killed by SIGKILL (see
// NewExec).
package builtin
