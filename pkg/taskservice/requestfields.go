package taskservice

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The checks below are of request fields that the gRPC API (internal/grpcapi)
// makes before it calls the node, with the limits of sizes.go. Each error
// is an *InvalidArgumentError naming the field.

// ValidateInstant checks an optional instant of a request: valid, and from
// MinInstant to before MaxInstant. The error names field.
func ValidateInstant(field string, ts *timestamppb.Timestamp) error { return checkInstant(field, ts) }

// ValidateTaskFilter checks the filter fields of a ListTasks request
// (states, kind, labels, node) and its page token's length.
func ValidateTaskFilter(req *taskdv1.ListTasksRequest) error { return checkTaskFilter(req) }

// ValidateEventFilter checks the filter fields of a WatchEvents request
// (types, kind, node) and its cursor's length.
func ValidateEventFilter(req *taskdv1.WatchEventsRequest) error { return checkEventFilter(req) }
