package follow

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/schedule"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Calendars follows the stored calendars (keyspace.Keys.Calendars) and
// keeps them compiled: a task's fire times are computed with its calendars
// as this node knows them. A calendar replaced later applies to the fire
// times not yet come (a stored next fire time the new calendar excludes is
// skipped when it comes due), so nothing is re-planned when one changes.
type Calendars struct {
	w Watch

	// changeMu makes each change of the copy (a list's result, a watch
	// response, Learn, Forget) copy, compile and install it whole before
	// the next begins, so that none is lost. Taken before mu; held while
	// compiling, never while reading etcd or calling out.
	changeMu sync.Mutex

	mu       sync.RWMutex
	stored   map[string]*taskdv1.Calendar // by name, each with its revision
	compiled map[string]*calendar.Calendar

	follow *prefixFollower
}

// NewCalendars returns a Calendars that knows no calendar until Load.
func NewCalendars(w Watch) *Calendars {
	c := &Calendars{w: w, stored: map[string]*taskdv1.Calendar{}, compiled: map[string]*calendar.Calendar{}}
	c.follow = &prefixFollower{w: w, what: "calendars", prefix: w.Keys.Calendars(), list: c.list, events: c.events}
	return c
}

// Exclusions is the exclusions of the named calendars (nil for none). A
// name this node does not know (the references make that a transient
// state) excludes nothing, and is logged.
func (c *Calendars) Exclusions(names []string) schedule.Exclusions {
	if len(names) == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	set := make(calendar.Set, 0, len(names))
	for _, name := range names {
		if cc := c.compiled[name]; cc != nil {
			set = append(set, cc)
		} else {
			c.w.Logger.Warn("task lists a calendar this node does not know; it excludes nothing here", "calendar", name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// Stored reports whether this node knows a calendar of that name as
// stored (compiled or not).
func (c *Calendars) Stored(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stored[name] != nil
}

// Learn makes cal (stored by this node, with its revision) known here at
// once; the watch brings it to the others.
func (c *Calendars) Learn(cal *taskdv1.Calendar) {
	c.edit(func(stored map[string]*taskdv1.Calendar) { stored[cal.Name] = cal })
}

// Forget drops calendar name (deleted by this node) at once.
func (c *Calendars) Forget(name string) {
	c.edit(func(stored map[string]*taskdv1.Calendar) { delete(stored, name) })
}

// Load reads every calendar and compiles them. Run watches after it.
func (c *Calendars) Load(ctx context.Context) error { return c.follow.load(ctx) }

// Run follows the calendars until ctx ends, from the revision of the last
// Load (listing first if there was none).
func (c *Calendars) Run(ctx context.Context) { c.follow.run(ctx) }

// list is Load, returning the revision it read at (etcdwatch's List).
func (c *Calendars) list(ctx context.Context) (int64, error) {
	cctx, cancel := c.w.etcdCtx(ctx)
	defer cancel()
	stored, rev, err := c.read(cctx, true)
	if err != nil {
		return 0, fmt.Errorf("read calendars: %w", err)
	}
	c.changeMu.Lock()
	c.set(stored)
	c.changeMu.Unlock()
	return rev, nil
}

// events applies one watch response to the copy.
func (c *Calendars) events(_ context.Context, evs []*clientv3.Event) {
	c.edit(func(stored map[string]*taskdv1.Calendar) {
		for _, ev := range evs {
			name, err := c.w.Keys.SplitCalendar(string(ev.Kv.Key))
			if err != nil {
				continue
			}
			if ev.Type == clientv3.EventTypeDelete {
				delete(stored, name)
				continue
			}
			cal := &taskdv1.Calendar{}
			if proto.Unmarshal(ev.Kv.Value, cal) == nil {
				cal.Revision = ev.Kv.ModRevision
				stored[name] = cal
			}
		}
	})
}

// Read reads every calendar from etcd (not the copy), by name, each with
// its revision. ctx bounds it.
func (c *Calendars) Read(ctx context.Context) (map[string]*taskdv1.Calendar, error) {
	stored, _, err := c.read(ctx, false)
	return stored, err
}

// read is Read, returning the revision it read at; logBad logs each
// calendar that does not decode (the follower's lists do, the callers'
// reads leave it out silently).
func (c *Calendars) read(ctx context.Context, logBad bool) (map[string]*taskdv1.Calendar, int64, error) {
	resp, err := c.w.Client.Get(ctx, c.w.Keys.Calendars(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	stored := map[string]*taskdv1.Calendar{}
	for _, kv := range resp.Kvs {
		cal := &taskdv1.Calendar{}
		if err := proto.Unmarshal(kv.Value, cal); err != nil {
			if logBad {
				c.w.Logger.Error("undecodable calendar", "key", string(kv.Key), "error", err)
			}
			continue
		}
		cal.Revision = kv.ModRevision
		stored[cal.Name] = cal
	}
	return stored, resp.Header.Revision, nil
}

// ReadOne reads calendar name from etcd (not the copy), with its revision;
// nil when there is none. ctx bounds it.
func (c *Calendars) ReadOne(ctx context.Context, name string) (*taskdv1.Calendar, error) {
	resp, err := c.w.Client.Get(ctx, c.w.Keys.Calendar(name))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	cal := &taskdv1.Calendar{}
	if err := proto.Unmarshal(resp.Kvs[0].Value, cal); err != nil {
		return nil, err
	}
	cal.Revision = resp.Kvs[0].ModRevision
	return cal, nil
}

// edit applies change to a copy of the stored calendars and makes the
// copy current, compiled.
func (c *Calendars) edit(change func(stored map[string]*taskdv1.Calendar)) {
	c.changeMu.Lock()
	defer c.changeMu.Unlock()
	c.mu.RLock()
	stored := make(map[string]*taskdv1.Calendar, len(c.stored)+1)
	for name, cal := range c.stored {
		stored[name] = cal
	}
	c.mu.RUnlock()
	change(stored)
	c.set(stored)
}

// set compiles the stored calendars and makes them current. changeMu held.
func (c *Calendars) set(stored map[string]*taskdv1.Calendar) {
	lookup := func(name string) (*taskdv1.Calendar, bool) { cal, ok := stored[name]; return cal, ok }
	compiled := make(map[string]*calendar.Calendar, len(stored))
	for name, cal := range stored {
		cc, err := calendar.Compile(cal, lookup)
		if err != nil {
			c.w.Logger.Error("calendar does not compile; it excludes nothing", "calendar", name, "error", err)
			continue
		}
		compiled[name] = cc
	}
	c.mu.Lock()
	c.stored, c.compiled = stored, compiled
	c.mu.Unlock()
}
