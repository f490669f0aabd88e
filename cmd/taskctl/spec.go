package main

import (
	"flag"
	"math"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the flags that describe a task (its triggers and its
// settings) into the proto messages, for schedule, update and preview.

// triggerOptions holds the trigger flags as given. Times and durations stay
// text so that buildTriggers checks them and names the flag in its error;
// zero values mean "not given".
type triggerOptions struct {
	Delay     string   // once delay, or periodic start relative to now
	At        string   // once time, or periodic start
	Every     string   // periodic interval
	Start     string   // periodic first fire time, cron earliest fire time
	Count     int64    // periodic number of periods
	Until     string   // periodic and cron last instant
	Cron      []string // one cron trigger each
	TimeZone  string   // zone of the cron triggers
	OnStartup bool
}

// triggerFlags names every trigger flag, for update to tell whether the
// triggers are to be replaced.
var triggerFlags = []string{"delay", "at", "every", "start", "count", "until", "cron", "tz", "on-startup"}

// defineTriggerFlags registers the trigger flags into o. onStartup adds
// --on-startup (preview has no use for it: such a trigger makes no fire
// time there).
func defineTriggerFlags(fs *flag.FlagSet, o *triggerOptions, onStartup bool) {
	fs.StringVar(&o.Delay, "delay", "", "fire once after `DUR` (with --every: the first period starts after DUR)")
	fs.StringVar(&o.At, "at", "", "fire once at the `RFC3339` time (with --every: the first period starts then)")
	fs.StringVar(&o.Every, "every", "", "fire periodically, every `DUR` (fixed rate)")
	fs.StringVar(&o.Start, "start", "", "`RFC3339` time: with --every, the first fire time (default: one interval from now); with --cron, the earliest")
	fs.Int64Var(&o.Count, "count", 0, "with --every: number of periods to fire (`N`; 0: no limit)")
	fs.StringVar(&o.Until, "until", "", "with --every or --cron: last instant a fire time may have, `RFC3339`")
	fs.Var((*stringList)(&o.Cron), "cron", "fire when the Quartz cron `EXPR` matches, e.g. '0 30 2 ? * MON-FRI' (repeatable: one trigger each)")
	fs.StringVar(&o.TimeZone, "tz", "", "IANA time `ZONE` the --cron expressions are read in, e.g. Europe/Berlin (default UTC)")
	if onStartup {
		fs.BoolVar(&o.OnStartup, "on-startup", false, "fire once each time the node that runs the task starts")
	}
}

// buildTriggers turns the trigger flags into triggers, in the order once,
// periodic, cron (in the order given), on-start-up. now is the client's
// clock, used only to turn --delay into a periodic start. Every error is a
// usageError naming the flag. With no trigger flag it returns no trigger.
//
// --every makes one PeriodicTrigger whose start comes from --start, --at or
// now+--delay (at most one of them). Without --every, --at or --delay make
// one OnceTrigger. Each --cron makes a CronTrigger in --tz, bounded by
// --start and --until. --on-startup makes an OnStartupTrigger.
func buildTriggers(o triggerOptions, now time.Time) ([]*taskdv1.Trigger, error) {
	delay, hasDelay, err := parseDurationFlag("delay", o.Delay, false)
	if err != nil {
		return nil, err
	}
	at, err := parseTimeFlag("at", o.At)
	if err != nil {
		return nil, err
	}
	if hasDelay && at != nil {
		return nil, usagef("--delay and --at exclude each other")
	}
	every, hasEvery, err := parseDurationFlag("every", o.Every, true)
	if err != nil {
		return nil, err
	}
	start, err := parseTimeFlag("start", o.Start)
	if err != nil {
		return nil, err
	}
	until, err := parseTimeFlag("until", o.Until)
	if err != nil {
		return nil, err
	}
	if o.Count < 0 {
		return nil, usagef("invalid value %d for flag --count: must not be negative", o.Count)
	}
	for _, expr := range o.Cron {
		if strings.TrimSpace(expr) == "" {
			return nil, usagef("invalid value %q for flag --cron: want a cron expression such as '0 30 2 ? * MON-FRI'", expr)
		}
	}
	hasCron := len(o.Cron) > 0
	if !hasEvery && !hasCron {
		for _, f := range []struct {
			name string
			set  bool
		}{{"start", start != nil}, {"until", until != nil}} {
			if f.set {
				return nil, usagef("--%s needs --every or --cron", f.name)
			}
		}
	}
	if !hasEvery && o.Count != 0 {
		return nil, usagef("--count needs --every")
	}
	if !hasCron && o.TimeZone != "" {
		return nil, usagef("--tz needs --cron")
	}

	var triggers []*taskdv1.Trigger
	if !hasEvery && (hasDelay || at != nil) {
		once := &taskdv1.OnceTrigger{}
		if at != nil {
			once.At = timestamppb.New(*at)
		} else {
			once.Delay = durationpb.New(delay)
		}
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: once}})
	}
	if hasEvery {
		if every < time.Millisecond {
			return nil, usagef("invalid value %q for flag --every: must be at least 1ms", o.Every)
		}
		if start != nil && (hasDelay || at != nil) {
			return nil, usagef("--start excludes --delay and --at (with --every they set the start)")
		}
		first := start
		switch {
		case at != nil:
			first = at
		case hasDelay:
			s := now.Add(delay)
			first = &s
		}
		if first != nil && until != nil && until.Before(*first) {
			return nil, usagef("invalid value %q for flag --until: before the first fire time %s", o.Until, formatTime(timestamppb.New(*first)))
		}
		p := &taskdv1.PeriodicTrigger{Interval: durationpb.New(every), Count: o.Count}
		if first != nil {
			p.Start = timestamppb.New(*first)
		}
		if until != nil {
			p.End = timestamppb.New(*until)
		}
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: p}})
	}
	if hasCron && start != nil && until != nil && until.Before(*start) {
		return nil, usagef("invalid value %q for flag --until: before --start %s", o.Until, formatTime(timestamppb.New(*start)))
	}
	for _, expr := range o.Cron {
		c := &taskdv1.CronTrigger{Expression: expr, TimeZone: o.TimeZone}
		if start != nil {
			c.Start = timestamppb.New(*start)
		}
		if until != nil {
			c.End = timestamppb.New(*until)
		}
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: c}})
	}
	if o.OnStartup {
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}})
	}
	return triggers, nil
}

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
	fs.Var((*stringList)(&o.Labels), "label", "label `k=v` for the client (repeatable)")
	fs.Var((*stringList)(&o.Calendars), "calendar", "`NAME` of an exclusion calendar whose days and times are skipped (repeatable)")
}

// applySpecOptions sets on spec the settings of o whose flag given reports
// as set (schedule passes a function that reports every flag, update only
// those on its command line). Every error is a usageError naming the flag.
// Data is set only when non-empty: an update keeps the task's data unless
// it is given.
func applySpecOptions(spec *taskdv1.TaskSpec, o specOptions, given func(name string) bool) error {
	// Payload and data.
	switch {
	case o.Payload != "" && o.PayloadFile != "":
		return usagef("--payload and --payload-file exclude each other")
	case o.PayloadFile != "":
		b, err := os.ReadFile(o.PayloadFile)
		if err != nil {
			return usagef("invalid value for flag --payload-file: %v", err)
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
			return usagef("invalid value %d for flag --priority: out of range", o.Priority)
		}
		spec.Priority = int32(o.Priority)
	}
	if given("max-attempts") {
		if o.MaxAttempts < 0 || o.MaxAttempts > math.MaxInt32 {
			return usagef("invalid value %d for flag --max-attempts: must be between 0 and %d", o.MaxAttempts, math.MaxInt32)
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
			return nil, usagef("invalid value %q for flag --%s: want key=value", kv, name)
		}
		if _, dup := labels[k]; dup {
			return nil, usagef("invalid value %q for flag --%s: key %q given twice", kv, name, k)
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
			return nil, usagef("invalid value \"\" for flag --calendar: want a calendar name")
		}
		if seen[n] {
			return nil, usagef("invalid value %q for flag --calendar: given twice", n)
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
		return usagef("invalid value %q for flag --backoff: %s", v, why)
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
	return 0, usagef("invalid value %q for flag --misfire: want once-now, skip or fire-all", v)
}

// parseState maps a --state value to a TaskState: a state's name (dead,
// SCHEDULED) in any case, with - or _, or the enum name.
func parseState(v string) (taskdv1.TaskState, error) {
	s := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "_")
	s = strings.TrimPrefix(s, "TASK_STATE_")
	if n, ok := taskdv1.TaskState_value["TASK_STATE_"+s]; ok && n != int32(taskdv1.TaskState_TASK_STATE_UNSPECIFIED) {
		return taskdv1.TaskState(n), nil
	}
	return 0, usagef("invalid value %q for flag --state: want scheduled, running, retrying, paused, completed, dead or canceled", v)
}
