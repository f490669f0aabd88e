// Package client is the Go client of a taskd cluster: schedule tasks for
// identities, look at them and their runs, watch their events, and steer
// the cluster (pause, move, drain), with plain Go types in and out.
//
// Any node answers any call, so a Client needs only the nodes' gRPC
// addresses; it fails over between them. Calls are retried with backoff
// after UNAVAILABLE and after an attempt's timeout, but only when a second
// delivery cannot do anything twice:
//
//   - Schedule and ScheduleMany give each durable task without an
//     IdempotencyKey a random one, so a retry after the first attempt was
//     stored but its answer lost returns the stored task instead of a
//     second one (existing is true);
//   - reads, Cancel, Pause, Resume, Move and Drain end in the same state
//     however often they are applied;
//   - RunNow and the scheduling of a non-durable task could act twice, so
//     they are not retried once they may have reached a node.
//
// Every method takes a context: its deadline bounds the call with all its
// retries, and WithCallTimeout bounds each attempt. Errors are *Error
// values carrying the gRPC code and the server's message (which names the
// field of a refused request); errors.Is matches them against ErrNotFound,
// ErrInvalidArgument and the other sentinels.
//
// The generated gRPC types remain available: Task.Proto holds the API's
// form, and API returns the raw generated client.
package client
