package taskflags

import (
	"flag"
	"math"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the task settings that schedule and update share into
// the fields of a TaskSpec.

// specOptions holds the task settings that schedule and update share, as
// given. An empty value asks for the server's default.
type specOptions struct {
	Payload      string
	PayloadFile  string
	Data         string
	Priority     int
	MaxAttempts  int
	TaskTimeout  string
	Backoff      string // INITIAL[,MAX]
	Misfire      string
	NoRecovery   bool
	AllowOverlap bool
	Labels       []string // k=v, in the order given
	Calendars    []string
}

// defineSpecFlags registers the shared task settings into o.
func defineSpecFlags(fs *flag.FlagSet, o *specOptions) {
	fs.StringVar(&o.Payload, "payload", "", "payload given to the handler, as `TEXT`")
	fs.StringVar(&o.PayloadFile, "payload-file", "", "read the payload from the file at `PATH`")
	fs.StringVar(&o.Data, "data", "", "persistent data of the task, as `TEXT`")
	fs.IntVar(&o.Priority, "priority", 0, "priority `N` among runs due at the same instant; higher first")
	fs.IntVar(&o.MaxAttempts, "max-attempts", 0, "attempts of one fire time before the task is DEAD (`N`; 0: server default of 25)")
	fs.StringVar(&o.TaskTimeout, "timeout-task", "", "timeout of one run, `DUR` (default: server default of 5m)")
	fs.StringVar(&o.Backoff, "backoff", "", "waits between retries, `INITIAL[,MAX]` such as 1s,10m (default 1s,10m)")
	fs.StringVar(&o.Misfire, "misfire", "", "`POLICY` for fire times missed: once-now, skip or fire-all (default: each trigger's own)")
	fs.BoolVar(&o.NoRecovery, "no-recovery", false, "do not run again a run that a crash interrupted (at-most-once)")
	fs.BoolVar(&o.AllowOverlap, "allow-overlap", false, "let a recurring task start while its previous run goes on")
	fs.Var((*cmdline.StringList)(&o.Labels), "label", "label `k=v` for the client (repeatable)")
	fs.Var((*cmdline.StringList)(&o.Calendars), "calendar", "`NAME` of an exclusion calendar whose days and times are skipped (repeatable)")
}

// applySpecOptions sets on spec the settings of o whose flag given reports
// as set (schedule passes a function that reports every flag, update only
// those on its command line). Every error is a cmdline.UsageError naming the flag.
// Data is set only when non-empty: an update keeps the task's data unless
// it is given.
func applySpecOptions(spec *taskdv1.TaskSpec, o specOptions, given func(name string) bool) error {
	// Payload and data.
	switch {
	case o.Payload != "" && o.PayloadFile != "":
		return cmdline.Usagef("--payload and --payload-file exclude each other")
	case o.PayloadFile != "":
		b, err := os.ReadFile(o.PayloadFile)
		if err != nil {
			return cmdline.Usagef("invalid value for flag --payload-file: %v", err)
		}
		spec.Payload = b
	case given("payload"):
		spec.Payload = nil
		if o.Payload != "" {
			spec.Payload = []byte(o.Payload)
		}
	}
	if given("data") && o.Data != "" {
		spec.Data = []byte(o.Data)
	}

	// Execution settings.
	if given("priority") {
		if o.Priority < math.MinInt32 || o.Priority > math.MaxInt32 {
			return cmdline.Usagef("invalid value %d for flag --priority: out of range", o.Priority)
		}
		spec.Priority = int32(o.Priority)
	}
	if given("max-attempts") {
		if o.MaxAttempts < 0 || o.MaxAttempts > math.MaxInt32 {
			return cmdline.Usagef("invalid value %d for flag --max-attempts: must be between 0 and %d", o.MaxAttempts, math.MaxInt32)
		}
		spec.MaxAttempts = int32(o.MaxAttempts)
	}
	if given("timeout-task") {
		timeout, hasTimeout, err := parseDurationFlag("timeout-task", o.TaskTimeout, true)
		if err != nil {
			return err
		}
		spec.Timeout = nil
		if hasTimeout {
			spec.Timeout = durationpb.New(timeout)
		}
	}
	if given("backoff") {
		b, err := parseBackoff(o.Backoff)
		if err != nil {
			return err
		}
		spec.Backoff = b
	}
	if given("misfire") {
		m, err := parseMisfire(o.Misfire)
		if err != nil {
			return err
		}
		spec.Misfire = m
	}
	if given("no-recovery") {
		spec.RequestsRecovery = nil
		if o.NoRecovery {
			spec.RequestsRecovery = proto.Bool(false)
		}
	}
	if given("allow-overlap") {
		spec.AllowOverlap = o.AllowOverlap
	}

	// Labels and calendars.
	if given("label") {
		labels, err := parseLabels("label", o.Labels)
		if err != nil {
			return err
		}
		spec.Labels = labels
	}
	if given("calendar") {
		cals, err := parseCalendars(o.Calendars)
		if err != nil {
			return err
		}
		spec.Calendars = cals
	}
	return nil
}

// parseLabels parses k=v pairs of the flag called name; none gives nil.
func parseLabels(name string, kvs []string) (map[string]string, error) {
	var labels map[string]string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, cmdline.Usagef("invalid value %q for flag --%s: want key=value", kv, name)
		}
		if _, dup := labels[k]; dup {
			return nil, cmdline.Usagef("invalid value %q for flag --%s: key %q given twice", kv, name, k)
		}
		if labels == nil {
			labels = make(map[string]string)
		}
		labels[k] = v
	}
	return labels, nil
}

// parseCalendars checks the --calendar names: not empty, not repeated.
func parseCalendars(names []string) ([]string, error) {
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" {
			return nil, cmdline.Usagef("invalid value \"\" for flag --calendar: want a calendar name")
		}
		if seen[n] {
			return nil, cmdline.Usagef("invalid value %q for flag --calendar: given twice", n)
		}
		seen[n] = true
	}
	if len(names) == 0 {
		return nil, nil
	}
	return append([]string(nil), names...), nil
}

// parseBackoff parses --backoff INITIAL[,MAX]; empty gives nil (the
// server's default).
func parseBackoff(v string) (*taskdv1.Backoff, error) {
	if v == "" {
		return nil, nil
	}
	initialText, maxText, hasMax := strings.Cut(v, ",")
	bad := func(why string) error {
		return cmdline.Usagef("invalid value %q for flag --backoff: %s", v, why)
	}
	initial, err := time.ParseDuration(strings.TrimSpace(initialText))
	if err != nil || initial <= 0 {
		return nil, bad("want INITIAL[,MAX], positive durations such as 1s,10m")
	}
	b := &taskdv1.Backoff{Initial: durationpb.New(initial)}
	if hasMax {
		maxWait, err := time.ParseDuration(strings.TrimSpace(maxText))
		if err != nil || maxWait <= 0 {
			return nil, bad("want INITIAL[,MAX], positive durations such as 1s,10m")
		}
		if maxWait < initial {
			return nil, bad("MAX is shorter than INITIAL")
		}
		b.Max = durationpb.New(maxWait)
	}
	return b, nil
}

// parseMisfire maps --misfire to a MisfirePolicy. It accepts once-now (or
// fire-once-now), skip and fire-all in any case, with - or _, and the enum
// names; empty or "default" gives UNSPECIFIED (the triggers' defaults).
func parseMisfire(v string) (taskdv1.MisfirePolicy, error) {
	s := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(v)), "_", "-")
	s = strings.TrimPrefix(s, "misfire-policy-")
	switch s {
	case "", "default", "unspecified":
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED, nil
	case "once-now", "fire-once-now":
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW, nil
	case "skip":
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP, nil
	case "fire-all":
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL, nil
	}
	return 0, cmdline.Usagef("invalid value %q for flag --misfire: want once-now, skip or fire-all", v)
}
