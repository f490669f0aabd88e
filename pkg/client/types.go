package client

import (
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Scope says where a task runs. It has no default: every TaskSpec states it.
type Scope string

const (
	// ScopeIdentity runs the task once in the cluster, on its identity's owner.
	ScopeIdentity Scope = "identity"
	// ScopeEveryNode runs the task on every RUNNING node by its triggers.
	ScopeEveryNode Scope = "every-node"
)

// Misfire is what happens to fire times that could not start in time.
type Misfire string

const (
	// MisfireDefault takes the trigger kind's default: once-now for one-shot
	// and on-start-up triggers, skip for the others.
	MisfireDefault Misfire = ""
	// MisfireOnceNow runs once at once for all the missed times.
	MisfireOnceNow Misfire = "once-now"
	// MisfireSkip goes on with the next fire time after now.
	MisfireSkip Misfire = "skip"
	// MisfireFireAll runs once per missed time, up to the node's catch-up limit.
	MisfireFireAll Misfire = "fire-all"
)

// State is where a task is in its life: SCHEDULED, RUNNING, RETRYING,
// PAUSED, or one of the final states COMPLETED, DEAD and CANCELED.
type State string

const (
	StateScheduled State = "SCHEDULED"
	StateRunning   State = "RUNNING"
	StateRetrying  State = "RETRYING"
	StatePaused    State = "PAUSED"
	StateCompleted State = "COMPLETED"
	StateDead      State = "DEAD"
	StateCanceled  State = "CANCELED"
)

// Final reports whether a task in this state will never run again.
func (s State) Final() bool {
	return s == StateCompleted || s == StateDead || s == StateCanceled
}

// Outcome is how one run ended: SUCCESS, WARNING, ERROR, CANCELED,
// INTERRUPTED (its node stopped or died), DROPPED (its identity moved away
// before the result was committed) or VETOED.
type Outcome string

// NodeState is a node's life cycle: STARTING, RUNNING, DRAINING, STOPPED.
type NodeState string

// EventType names a task event: SCHEDULED, FIRED, STARTED, SUCCEEDED,
// FAILED, RETRYING, NEXT_SCHEDULED, FINALIZED, DEAD, CANCELED, MOVED, ...
// (docs/contract.md lists them all).
type EventType string

// Trigger is one rule that makes fire times. Make one with Now, At, After,
// Every, Cron or OnStartup and adjust its fields; which rule it is follows
// from the fields set: Cron, then Interval, then OnStartup, else once.
type Trigger struct {
	// At is a one-shot trigger's fire time; Delay counts from the moment the
	// server accepts the task. Neither set: now.
	At    time.Time
	Delay time.Duration
	// Interval is a periodic trigger's fixed rate (at least 1 ms).
	Interval time.Duration
	// Cron is a Quartz cron expression (6 or 7 fields) read in TimeZone
	// (an IANA name; empty is UTC).
	Cron     string
	TimeZone string
	// Start and End bound a periodic or cron trigger; Count, if above zero,
	// is the number of periods a periodic trigger fires.
	Start, End time.Time
	Count      int64
	// OnStartup fires once for each start of the node that runs the task.
	OnStartup bool
	// Name identifies the trigger within its task, in runs and events and
	// for EditTriggers' Remove. Left empty, the server names it "#<n>"
	// (names beginning with '#' are the server's).
	Name string
	// Misfire overrides the task's misfire policy for this trigger.
	Misfire Misfire
	// Jitter delays each fire time of a periodic or cron trigger by an
	// amount from 0 up to Jitter, fixed by the task's id, the trigger's
	// name and the fire time (at most 24 h, less than Interval).
	Jitter time.Duration
	// Proto, when set, is sent as it is instead of the fields above: for a
	// caller that holds the API's form already (a trigger read as
	// protojson), which the fields cannot all express (a trigger without a
	// kind, for the node to refuse by name). Triggers the client returns
	// leave it nil.
	Proto *taskdv1.Trigger
}

// Now is a one-shot trigger that fires as soon as the task is stored.
func Now() Trigger { return Trigger{} }

// At is a one-shot trigger that fires at t.
func At(t time.Time) Trigger { return Trigger{At: t} }

// After is a one-shot trigger that fires d after the server accepts the task.
func After(d time.Duration) Trigger { return Trigger{Delay: d} }

// Every is a periodic trigger: its first fire time is one interval from
// now unless Start says otherwise.
func Every(interval time.Duration) Trigger { return Trigger{Interval: interval} }

// Cron is a cron trigger: expr is a Quartz expression such as
// "0 30 2 ? * MON-FRI", read in zone (empty is UTC).
func Cron(expr, zone string) Trigger { return Trigger{Cron: expr, TimeZone: zone} }

// OnStartup fires once for each start of the node that runs the task.
func OnStartup() Trigger { return Trigger{OnStartup: true} }

// Backoff shapes the waits between retries of a failed run: exponential
// with jitter, from Initial (default 1 s) up to Max (default 10 min).
type Backoff struct {
	Initial, Max time.Duration
}

// TaskSpec is what a client asks for. Identity, Kind and Scope are
// required; with no Triggers the server gives the task its default, one
// once trigger due now (as Now). The server names any field it refuses.
type TaskSpec struct {
	Identity string
	Kind     string
	Scope    Scope
	Triggers []Trigger
	// Payload is given to the handler; Data is the task's persistent data,
	// which its handler may replace.
	Payload, Data []byte
	Misfire       Misfire
	// Priority breaks ties between runs due at the same instant; higher first.
	Priority int32
	// MaxAttempts of one fire time before the task is DEAD (0: 25).
	MaxAttempts int32
	Backoff     Backoff
	// Timeout of one run (0: 5 min).
	Timeout time.Duration
	// NoRecovery: a run interrupted by a crash is not run again (it is by
	// default).
	NoRecovery bool
	// AllowOverlap lets a recurring task start while its previous run goes on.
	AllowOverlap bool
	// Calendars name exclusion calendars.
	Calendars []string
	Labels    map[string]string
	// IdempotencyKey makes scheduling twice return the first task. Schedule
	// fills in a random one when it is empty, so that its own retries never
	// store a task twice; set it yourself to make your retries safe too.
	IdempotencyKey string
	// NonDurable tasks are never stored: they live on one node and are lost
	// with it. They take no idempotency key, so Schedule does not retry them
	// after an error that leaves their fate unknown.
	NonDurable bool
	// Proto, when set, is sent instead of the fields above, as it is but
	// for the IdempotencyKey Schedule may fill in: for a caller that holds
	// the API's form already (a spec read as protojson, or one returned in
	// Task.Proto and changed), which the fields cannot all express (an
	// explicit requests_recovery, a zero timeout, a trigger for the node to
	// refuse by name). Specs the client returns leave it nil.
	Proto *taskdv1.TaskSpec
}

// RunSummary is the short form of a task's most recent run.
type RunSummary struct {
	RunNumber          int64
	Outcome            Outcome
	StartedAt, EndedAt time.Time
	Node               string
	Message            string
}

// Task is a stored task and its state.
type Task struct {
	ID    string
	Spec  TaskSpec
	State State
	// CreatedAt is when the task was accepted; FinishedAt when it reached a
	// final state.
	CreatedAt, FinishedAt time.Time
	// NextFireTime is zero when the task has no more fire times;
	// NextFireTimes holds up to five coming ones (Get only).
	NextFireTime  time.Time
	NextFireTimes []time.Time
	// RunCount is the highest run number so far; Attempt the attempt of the
	// current fire time.
	RunCount int64
	Attempt  int32
	LastRun  *RunSummary
	// Revision is the task's etcd revision, the second half of a fence.
	Revision int64
	Paused   bool
	PausedBy []string
	Misfires int64
	// Waiting says what the task's due run waits for before it can start,
	// when the identity's owner answered: "worker" while no remote worker
	// of its kind with a free slot is connected there (the run holds no
	// run slot and uses no attempt). WaitingSince is when it began, and
	// WaitingReason says why for people: whether nothing on the owner
	// serves the kind (no handler, no connected worker) or its workers are
	// busy, naming the kind and the node.
	Waiting       string
	WaitingSince  time.Time
	WaitingReason string
	// Proto is the task as the API returned it.
	Proto *taskdv1.Task
}

// Run is one execution of a task, from its history.
type Run struct {
	TaskID    string
	RunNumber int64
	Attempt   int32
	// FireTime is the scheduled time the run served.
	FireTime           time.Time
	StartedAt, EndedAt time.Time
	Node               string
	Outcome            Outcome
	Message            string
	// Fence is the token the handler got: "<epoch>.<revision>".
	Fence string
	// Manual is true for a RunNow run; Recovery for the re-execution of a
	// run a crash interrupted.
	Manual, Recovery bool
	// Trigger is the index, when the run was fired, of the trigger that
	// fired it (-1: manual); TriggerName is its name. TriggerRemoved says
	// the task no longer has a trigger of that name (an update replaced or
	// removed it).
	Trigger        int32
	TriggerName    string
	TriggerRemoved bool
	// Proto is the run as the API returned it.
	Proto *taskdv1.Run
}

// Identity is an identity's mapping and load.
type Identity struct {
	Name string
	// Mapped is false while no node owns the identity.
	Mapped bool
	Node   string
	// Epoch changes at every move: the first half of a fence.
	Epoch     int64
	TaskCount int64
	// Active is the last status the owner reported: true while the identity
	// has tasks pending or running there.
	Active      bool
	StatusNode  string
	StatusSince time.Time
	// Proto is the identity as the API returned it.
	Proto *taskdv1.Identity
}

// Node is a registered taskd node.
type Node struct {
	Name string
	// Incarnation is new at every start of the node.
	Incarnation string
	// Address is the node's gRPC API.
	Address         string
	State           NodeState
	StartedAt       time.Time
	DispatchStart   time.Time
	IdentitiesOwned int64
	// Kinds the node can run: its own handlers' and its workers'.
	Kinds []string
	// Leader is true for the placement leader, which reassigns the
	// identities of dead nodes.
	Leader bool
	// LeaseRemaining is the time left on the node's lease unless renewed
	// (renewed every quarter of its TTL); zero when it has expired.
	LeaseRemaining time.Duration
	// Proto is the node as the API returned it.
	Proto *taskdv1.Node
}

// Event is one task event from the cluster's event stream.
type Event struct {
	Type      EventType
	Time      time.Time
	Node      string
	Identity  string
	TaskID    string
	Kind      string
	RunNumber int64
	Attempt   int32
	Fence     string
	Outcome   Outcome
	Message   string
	// Next is the next fire time (NEXT_SCHEDULED, RETRYING).
	Next time.Time
	// FireTime is the scheduled time of the run (FIRED, STARTED); zero for
	// a manual run. A STARTED event's Time minus FireTime is its fire lag.
	FireTime time.Time
	// Count of fire times a MISFIRED event stands for.
	Count int64
	// Trigger and TriggerName are the index and name of the trigger that
	// fired the run (FIRED, STARTED; -1 and "" when none).
	Trigger     int32
	TriggerName string
	// Cursor resumes a watch after this event.
	Cursor string
	// Proto is the event as the API sent it.
	Proto *taskdv1.Event
}

// Pause is an identity or kind pause in force.
type Pause struct {
	Identity string
	Kind     string
	Since    time.Time
	// Proto is the pause as the API returned it.
	Proto *taskdv1.Pause
}
