package taskspec

import (
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file checks the fields a request shares with others (a kind, a
// node's name, an instant, labels) and the filters of ListTasks and
// WatchEvents, with the limits of limits.go.

// CheckKind checks a kind name: 1-MaxKindLen bytes of UTF-8 without
// control or bidirectional formatting characters. The error names field.
func CheckKind(field, kind string) error { return CheckText(field, kind, MaxKindLen, false) }

// CheckText checks a name-like string: 1 (0 with optional) to max bytes of
// UTF-8 without control or bidirectional formatting characters.
func CheckText(field, s string, max int, optional bool) error {
	switch {
	case s == "" && optional:
		return nil
	case s == "":
		return Invalid(field, "must not be empty")
	case len(s) > max:
		return Invalid(field, "is %d bytes, the limit is %d", len(s), max)
	case !utf8.ValidString(s):
		return Invalid(field, "is not valid UTF-8")
	}
	if err := identity.CheckText(s); err != nil {
		return Invalid(field, "%s", err.Error())
	}
	return nil
}

// checkLen checks only the length and encoding of s.
func checkLen(field, s string, max int) error {
	if len(s) > max {
		return Invalid(field, "is %d bytes, the limit is %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return Invalid(field, "is not valid UTF-8")
	}
	return nil
}

// CheckInstant checks an optional instant of a request: valid, and from
// MinInstant to before MaxInstant.
func CheckInstant(field string, ts *timestamppb.Timestamp) error {
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		return Invalid(field, "%s", err.Error())
	}
	if t := ts.AsTime(); t.Before(MinInstant) || !t.Before(MaxInstant) {
		return Invalid(field, "is %s, must be from %s to before %s", t.Format(time.RFC3339), MinInstant.Format(time.DateOnly), MaxInstant.Format(time.DateOnly))
	}
	return nil
}

// CheckLabels checks a label map: of a task, or a ListTasks filter.
func CheckLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return Invalid(field, "has %d labels, the limit is %d", len(labels), MaxLabels)
	}
	for k, v := range labels {
		if k == "" || len(k) > MaxLabelKeyLen || !utf8.ValidString(k) || identity.CheckText(k) != nil {
			return Invalid(field, "key %.*q must be 1-%d bytes of UTF-8 without control characters", MaxLabelKeyLen, k, MaxLabelKeyLen)
		}
		if err := checkLen(field+"["+k+"]", v, MaxLabelValueLen); err != nil {
			return err
		}
	}
	return nil
}

// CheckNodeName checks a node's name: 1-MaxNodeNameLen bytes of
// [A-Za-z0-9._-] (it is used in etcd keys). The error names field.
func CheckNodeName(field, name string) error {
	if name == "" {
		return Invalid(field, "is required")
	}
	if len(name) > MaxNodeNameLen {
		return Invalid(field, "is %d bytes, the limit is %d", len(name), MaxNodeNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return Invalid(field, "%q has a byte other than A-Z a-z 0-9 . _ - at %d", name, i)
		}
	}
	return nil
}

// checkEnumList checks a filter's list of enum values: each known and not
// UNSPECIFIED, none twice (so the list is bounded by the enum).
func checkEnumList[E ~int32](field string, list []E, names map[int32]string) error {
	if len(list) > len(names) {
		return Invalid(field, "has %d values, there are only %d", len(list), len(names)-1)
	}
	seen := map[E]bool{}
	for i, v := range list {
		if _, ok := names[int32(v)]; !ok || v == 0 {
			return Invalid(fmt.Sprintf("%s[%d]", field, i), "unknown value %d", v)
		}
		if seen[v] {
			return Invalid(fmt.Sprintf("%s[%d]", field, i), "%s is listed twice", names[int32(v)])
		}
		seen[v] = true
	}
	return nil
}

// checkFilter checks the kind, labels (none for a filter without) and node
// (if any) a filter names, in that order.
func checkFilter(kind string, labels map[string]string, node string) error {
	if err := CheckText("kind", kind, MaxKindLen, true); err != nil {
		return err
	}
	if err := CheckLabels("labels", labels); err != nil {
		return err
	}
	if node != "" {
		return CheckNodeName("node", node)
	}
	return nil
}

// CheckTaskFilter checks the filter fields of a ListTasks request (states,
// kind, labels, node) and its page token's length.
func CheckTaskFilter(req *taskdv1.ListTasksRequest) error {
	if err := checkEnumList("states", req.States, taskdv1.TaskState_name); err != nil {
		return err
	}
	if err := checkFilter(req.Kind, req.Labels, req.Node); err != nil {
		return err
	}
	if len(req.PageToken) > MaxPageTokenLen {
		return Invalid("page_token", "is %d bytes, the limit is %d: it is not a token from a previous response", len(req.PageToken), MaxPageTokenLen)
	}
	return nil
}

// CheckEventFilter checks the filter fields of a WatchEvents request
// (types, kind, node) and its cursor's length (the identity and task id
// are checked as elsewhere).
func CheckEventFilter(req *taskdv1.WatchEventsRequest) error {
	if err := checkEnumList("types", req.Types, taskdv1.EventType_name); err != nil {
		return err
	}
	if err := checkFilter(req.Kind, nil, req.Node); err != nil {
		return err
	}
	if len(req.Cursor) > MaxCursorLen {
		return Invalid("cursor", "is %d bytes, the limit is %d: it is not a cursor from an earlier event", len(req.Cursor), MaxCursorLen)
	}
	return nil
}
