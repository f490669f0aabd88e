// Package client is the Go client of a taskd cluster: schedule tasks for
// identities, look at them and their runs, watch their events, and steer
// the cluster (pause, move, drain, its calendars and tokens), with plain Go
// types in and out.
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
//   - reads, Cancel, Pause, Resume, Move, Drain and a replacing
//     CreateCalendar end in the same state however often they are applied;
//     a retried Delete, DeleteCalendar or RevokeToken that finds its
//     object gone after a lost answer returns nil;
//   - RunNow, Update, EditTriggers, CreateToken, a CreateCalendar without
//     replace and the scheduling of a non-durable task (or, with
//     WithoutGeneratedKeys, of one without a key) could act twice or
//     refuse what their first attempt did, so they are not retried once
//     they may have reached a node.
//
// Every method takes a context: its deadline bounds the call with all its
// retries, and WithCallTimeout bounds each attempt. Errors are *Error
// values carrying the gRPC code and the server's message (which names the
// field of a refused request); errors.Is matches them against ErrNotFound,
// ErrInvalidArgument and the other sentinels.
//
// One Client may serve callers with tokens of their own: a call whose
// context comes from ContextWithToken carries that token instead of the
// client's (the console serves every viewer with one Client this way).
//
// The generated gRPC types remain available: the Proto field of each
// returned type (Task, Run, Node, Event, ...) holds the API's form, a
// TaskSpec, Trigger or Calendar to send may carry it instead of its
// fields, and API returns the raw generated client. Watch opens one event
// stream for a caller that handles a broken stream itself.
//
// Lock: a Client has none of its own (its connection is gRPC's). Worker.Run
// guards its jobs in flight with a leaf lock of its own.
package client
