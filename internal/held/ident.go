package held

import "time"

// Ident is what the node holds for one identity: its epoch (0 for the
// non-durable tasks kept per identity) and its tasks.
type Ident struct {
	Name  string
	Epoch int64
	// Scope is how the identity's tasks are kept, started and committed
	// (internal/runs/scope.go): owned here (IDENTITY), EVERY_NODE (not owned: run
	// here), or non-durable.
	Scope Scope
	Lost  bool
	// Leaving marks an identity chosen to move away (internal/ownership's rebalance.go, ownerside.go):
	// none of its runs starts until its move is made or given up.
	Leaving bool
	Tasks   TaskSet
	// Active holds the identity's start queues and run slots while it has
	// due work or runs (Activate); nil otherwise, which is most of the time for
	// most identities: a node holds an Ident per identity it owns.
	Active *Active
}

// Active is what an identity with due work or runs in flight holds
// besides its tasks. It is allocated on first use (Activate) and dropped when the
// identity is idle again (DropIfIdle); while its starter runs it stays, so
// the starter may keep pointers into it across unlocks.
type Active struct {
	// StartQ holds due entries in dispatch order; one starter goroutine per
	// identity drains it, so one identity's runs start in order (contract §2.6).
	StartQ []*Entry
	// GrantQ holds entries given a token of their kind's limit, started
	// before startQ (pkg/taskservice's limits.go).
	GrantQ []*Entry
	// ArmQ holds entries due within the look-ahead, to be armed; fireQ
	// the armed runs whose fire time has come, launched first (pkg/taskservice's arming.go).
	ArmQ     []*Entry
	FireQ    []*Armed
	Starting bool
	// Held counts the run slots the identity's runs hold (at most
	// identityShare); shareWait, when set, is closed when one is given
	// back.
	Held      int
	ShareWait chan struct{}
}

// Activate returns st's Active, allocating it if st has none. The engine lock held.
func (st *Ident) Activate() *Active {
	if st.Active == nil {
		st.Active = &Active{}
	}
	return st.Active
}

// DropIfIdle drops st's Active once nothing is queued, no run holds a
// slot, and no starter runs. The engine lock held.
func (st *Ident) DropIfIdle() {
	r := st.Active
	if r != nil && !r.Starting && r.Held == 0 && r.ShareWait == nil &&
		len(r.StartQ)+len(r.GrantQ)+len(r.ArmQ)+len(r.FireQ) == 0 {
		st.Active = nil
	}
}

// Task returns the entry of task id; nil if there is none or st is nil.
func (st *Ident) Task(id string) *Entry {
	if st == nil {
		return nil
	}
	return st.Tasks.Get(id)
}

// Quiet reports whether none of st's tasks is running, thawing,
// waiting for another node's run, or due before horizon. The engine lock held.
func (st *Ident) Quiet(horizon time.Time) bool {
	for e := range st.Tasks.All() {
		if e.Running || e.Thawing || (e.X != nil && e.X.AwaitSince != 0) ||
			(e.Idx >= 0 && e.Due.Time().Before(horizon)) {
			return false
		}
	}
	return true
}
