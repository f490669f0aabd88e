package taskservice

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/taskspec"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The checks below are of request fields that the gRPC API (internal/grpcapi)
// and embedding programs make before they call the node, with the limits
// of sizes.go (internal/taskspec). Each error is an *InvalidArgumentError
// naming the field.

// ValidateKind checks a kind name: 1-MaxKindLen bytes of UTF-8 without
// control or bidirectional formatting characters. The error names field.
func ValidateKind(field, kind string) error { return taskspec.CheckKind(field, kind) }

func validateKind(field, kind string) error { return taskspec.CheckKind(field, kind) }

// ValidateNodeName checks a node's name: 1-MaxNodeNameLen bytes of
// [A-Za-z0-9._-] (it is used in etcd keys). The error names field.
func ValidateNodeName(field, name string) error { return taskspec.CheckNodeName(field, name) }

// ValidateInstant checks an optional instant of a request: valid, and from
// MinInstant to before MaxInstant. The error names field.
func ValidateInstant(field string, ts *timestamppb.Timestamp) error {
	return taskspec.CheckInstant(field, ts)
}

// ValidateTaskFilter checks the filter fields of a ListTasks request
// (states, kind, labels, node) and its page token's length.
func ValidateTaskFilter(req *taskdv1.ListTasksRequest) error { return taskspec.CheckTaskFilter(req) }

// ValidateEventFilter checks the filter fields of a WatchEvents request
// (types, kind, node) and its cursor's length.
func ValidateEventFilter(req *taskdv1.WatchEventsRequest) error {
	return taskspec.CheckEventFilter(req)
}
