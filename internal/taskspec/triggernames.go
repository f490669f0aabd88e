package taskspec

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file gives every trigger of a stored task a name that identifies it
// for the task's whole life, as a Quartz trigger has its key: runs and
// events name the trigger that fired them, an update keeps a trigger (and
// its progress) by name, and remove_triggers names the one to remove.
//
// A trigger stored without a name is named by the server "#<n>", n
// counting every trigger the task was ever given from 0
// (TaskRecord.trigger_seq), so that a name in a task's history never comes
// to mean another trigger: a trigger replaced or removed takes its name
// with it, and a run of it is shown as such (Run.trigger_removed). A new
// task's unnamed trigger i is "#<i>", its index. Names beginning with '#'
// are the server's: a request may give one only for a trigger the task
// already has under it.
//
// Records written before names were given (trigger_seq 0, triggers
// without names) are read as if their unnamed trigger i were "#<i>", and
// are named so by their first update.

// ServerNamePrefix starts every name the server gives.
const ServerNamePrefix = record.ServerNamePrefix

// IsServerName reports whether name is of the server's form.
func IsServerName(name string) bool { return strings.HasPrefix(name, ServerNamePrefix) }

// NameNewTriggers names the unnamed triggers of a new record by their
// index and starts its count after them.
func NameNewTriggers(rec *storev1.TaskRecord) {
	used := triggerNames(rec.GetSpec().GetTriggers())
	for i, t := range rec.GetSpec().GetTriggers() {
		if t.Name == "" {
			t.Name = freeName(used, int64(i))
			used[t.Name] = true
		}
	}
	rec.TriggerSeq = int64(len(rec.GetSpec().GetTriggers()))
}

// NameLegacyTriggers names, in place, the unnamed triggers of a record
// written before names were given, as they have been read: trigger i is
// "#<i>". It reports whether it named any.
func NameLegacyTriggers(rec *storev1.TaskRecord) bool {
	if !hasLegacyTriggers(rec) {
		return false
	}
	NameNewTriggers(rec)
	return true
}

// hasLegacyTriggers reports whether rec has an unnamed trigger.
func hasLegacyTriggers(rec *storev1.TaskRecord) bool {
	for _, t := range rec.GetSpec().GetTriggers() {
		if t.GetName() == "" {
			return true
		}
	}
	return false
}

// WithTriggerNames returns rec, or when it has unnamed triggers (a legacy
// record) a copy of it with them named as they are read.
func WithTriggerNames(rec *storev1.TaskRecord) *storev1.TaskRecord {
	if !hasLegacyTriggers(rec) {
		return rec
	}
	c := record.Clone(rec)
	NameLegacyTriggers(c)
	return c
}

// NextTriggerName gives an unnamed trigger added to rec its name and
// counts on.
func NextTriggerName(rec *storev1.TaskRecord, used map[string]bool) string {
	name := freeName(used, rec.TriggerSeq)
	seq, _ := strconv.ParseInt(strings.TrimPrefix(name, ServerNamePrefix), 10, 64)
	rec.TriggerSeq = seq + 1
	used[name] = true
	return name
}

// freeName is "#<n>" for the first n from from on that no trigger uses (a
// user could have given such a name before the server reserved them).
func freeName(used map[string]bool, from int64) string {
	for n := from; ; n++ {
		if name := ServerNamePrefix + strconv.FormatInt(n, 10); !used[name] {
			return name
		}
	}
}

func triggerNames(ts []*taskdv1.Trigger) map[string]bool {
	used := make(map[string]bool, len(ts))
	for _, t := range ts {
		if t.GetName() != "" {
			used[t.GetName()] = true
		}
	}
	return used
}

// IndexOfTrigger is the index of the trigger named name in ts, or -1.
func IndexOfTrigger(ts []*taskdv1.Trigger, name string) int {
	for i, t := range ts {
		if t.GetName() == name {
			return i
		}
	}
	return -1
}

// CheckServerNames refuses a name of the server's form that is not the
// name of a trigger the task has (have).
func CheckServerNames(field string, ts []*taskdv1.Trigger, have func(name string) bool) error {
	for i, t := range ts {
		if !IsServerName(t.GetName()) || (have != nil && have(t.Name)) {
			continue
		}
		return Invalid(fmt.Sprintf("%s[%d].name", field, i),
			"names beginning with %q are given by the server to unnamed triggers, and %q is not one of the task's: leave the name empty, or choose another",
			ServerNamePrefix, t.Name)
	}
	return nil
}

// sameRule reports whether two triggers make the same fire times, names
// aside (compared as given against as stored: a trigger given with a delay
// or without a start was resolved when stored, so it differs).
func sameRule(a, b *taskdv1.Trigger) bool {
	if a.GetName() == b.GetName() {
		return proto.Equal(a, b)
	}
	x, y := proto.Clone(a).(*taskdv1.Trigger), proto.Clone(b).(*taskdv1.Trigger)
	x.Name, y.Name = "", ""
	return proto.Equal(x, y)
}

// MatchTriggers pairs each trigger of an update's spec with the stored
// trigger it keeps, or -1: a named one with the stored trigger of that
// name; an unnamed one with the first stored server-named trigger of the
// same rule not taken yet. keep says whether the stored trigger's
// progress goes on (its rule is unchanged).
func MatchTriggers(stored, given []*taskdv1.Trigger) (match []int, keep []bool) {
	match, keep = make([]int, len(given)), make([]bool, len(given))
	taken := make([]bool, len(stored))
	for i, g := range given {
		match[i] = -1
		if g.GetName() == "" {
			continue
		}
		if j := IndexOfTrigger(stored, g.Name); j >= 0 {
			match[i], keep[i], taken[j] = j, sameRule(stored[j], g), true
		}
	}
	for i, g := range given {
		if g.GetName() != "" {
			continue
		}
		for j, s := range stored {
			if !taken[j] && IsServerName(s.GetName()) && sameRule(s, g) {
				match[i], keep[i], taken[j] = j, true, true
				break
			}
		}
	}
	return match, keep
}

// MarkRemovedTriggers marks the runs whose trigger rec no longer has.
// A run without a trigger name (a manual run, or one recorded before
// names were given) is left as it is.
func MarkRemovedTriggers(rec *storev1.TaskRecord, runs []*taskdv1.Run) {
	rec = WithTriggerNames(rec)
	for _, r := range runs {
		if r.GetTriggerName() != "" && !r.GetManual() {
			r.TriggerRemoved = IndexOfTrigger(rec.GetSpec().GetTriggers(), r.TriggerName) < 0
		}
	}
}
