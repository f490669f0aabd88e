// Package grpcapi is the gRPC face of a taskd node: it serves the
// taskd.v1 TaskService over a taskservice.Node (NewTaskService), checking
// the request fields that are the API's own (identities, task ids, page
// sizes) and calling only the Node's exported methods, and it holds the
// one mapping of the node's errors to gRPC statuses (Status), which the
// WorkerService (pkg/workers) uses too. It keeps no state of its own and
// takes no lock.
//
// Schedule names a spec's wrong field relative to the spec; the gRPC layer
// names it as the request does: "task.…" for ScheduleTask, "tasks[i].…"
// for ScheduleTasks.
package grpcapi
