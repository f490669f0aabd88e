package taskflags

import (
	"flag"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/render"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the trigger flags into triggers, for schedule, update,
// trigger add and preview.

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
	Jitter    string   // delay of each periodic and cron fire time, up to
	OnStartup bool
}

// triggerFlags names every trigger flag, for update to tell whether the
// triggers are to be replaced.
var triggerFlags = []string{"delay", "at", "every", "start", "count", "until", "cron", "tz", "jitter", "on-startup"}

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
	fs.Var((*cmdline.StringList)(&o.Cron), "cron", "fire when the Quartz cron `EXPR` matches, e.g. '0 30 2 ? * MON-FRI' (repeatable: one trigger each)")
	fs.StringVar(&o.TimeZone, "tz", "", "IANA time `ZONE` the --cron expressions are read in, e.g. Europe/Berlin (default UTC)")
	fs.StringVar(&o.Jitter, "jitter", "", "with --every or --cron: delay each fire time by up to `DUR`, fixed per task and fire time (spreads tasks on one schedule)")
	if onStartup {
		fs.BoolVar(&o.OnStartup, "on-startup", false, "fire once each time the node that runs the task starts")
	}
}

// buildTriggers turns the trigger flags into triggers, in the order once,
// periodic, cron (in the order given), on-start-up. now is the client's
// clock, used only to turn --delay into a periodic start. Every error is a
// cmdline.UsageError naming the flag. With no trigger flag it returns no trigger.
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
		return nil, cmdline.Usagef("--delay and --at exclude each other")
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
		return nil, cmdline.Usagef("invalid value %d for flag --count: must not be negative", o.Count)
	}
	for _, expr := range o.Cron {
		if strings.TrimSpace(expr) == "" {
			return nil, cmdline.Usagef("invalid value %q for flag --cron: want a cron expression such as '0 30 2 ? * MON-FRI'", expr)
		}
	}
	hasCron := len(o.Cron) > 0
	if !hasEvery && !hasCron {
		for _, f := range []struct {
			name string
			set  bool
		}{{"start", start != nil}, {"until", until != nil}} {
			if f.set {
				return nil, cmdline.Usagef("--%s needs --every or --cron", f.name)
			}
		}
	}
	if !hasEvery && o.Count != 0 {
		return nil, cmdline.Usagef("--count needs --every")
	}
	if !hasCron && o.TimeZone != "" {
		return nil, cmdline.Usagef("--tz needs --cron")
	}
	jitter, hasJitter, err := parseDurationFlag("jitter", o.Jitter, false)
	if err != nil {
		return nil, err
	}
	if hasJitter && !hasEvery && !hasCron {
		return nil, cmdline.Usagef("--jitter needs --every or --cron")
	}
	var jitterPB *durationpb.Duration
	if hasJitter && jitter > 0 {
		jitterPB = durationpb.New(jitter)
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
			return nil, cmdline.Usagef("invalid value %q for flag --every: must be at least 1ms", o.Every)
		}
		if start != nil && (hasDelay || at != nil) {
			return nil, cmdline.Usagef("--start excludes --delay and --at (with --every they set the start)")
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
			return nil, cmdline.Usagef("invalid value %q for flag --until: before the first fire time %s", o.Until, render.Time(timestamppb.New(*first)))
		}
		p := &taskdv1.PeriodicTrigger{Interval: durationpb.New(every), Count: o.Count}
		if first != nil {
			p.Start = timestamppb.New(*first)
		}
		if until != nil {
			p.End = timestamppb.New(*until)
		}
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: p}, Jitter: jitterPB})
	}
	if hasCron && start != nil && until != nil && until.Before(*start) {
		return nil, cmdline.Usagef("invalid value %q for flag --until: before --start %s", o.Until, render.Time(timestamppb.New(*start)))
	}
	for _, expr := range o.Cron {
		c := &taskdv1.CronTrigger{Expression: expr, TimeZone: o.TimeZone}
		if start != nil {
			c.Start = timestamppb.New(*start)
		}
		if until != nil {
			c.End = timestamppb.New(*until)
		}
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: c}, Jitter: jitterPB})
	}
	if o.OnStartup {
		triggers = append(triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}})
	}
	return triggers, nil
}

// someTriggers is buildTriggers for a command that needs a trigger: with
// no trigger flag, or only --on-startup=false, its error is missing.
func someTriggers(o triggerOptions, now time.Time, missing string) ([]*taskdv1.Trigger, error) {
	triggers, err := buildTriggers(o, now)
	if err == nil && len(triggers) == 0 {
		err = cmdline.Usagef("%s", missing)
	}
	return triggers, err
}

// parseTimeFlag parses an RFC3339 flag value; empty gives nil.
func parseTimeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, cmdline.Usagef("invalid value %q for flag --%s: want an RFC3339 time such as 2026-01-02T15:04:05Z", v, name)
	}
	return &t, nil
}

// parseDurationFlag parses a duration flag value; empty gives 0 and false.
// A negative duration is refused; so is zero when positive is set.
func parseDurationFlag(name, v string, positive bool) (time.Duration, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false, cmdline.Usagef("invalid value %q for flag --%s: want a duration such as 90s or 1h30m", v, name)
	}
	if d < 0 || (positive && d == 0) {
		return 0, false, cmdline.Usagef("invalid value %q for flag --%s: must be positive", v, name)
	}
	return d, true, nil
}
