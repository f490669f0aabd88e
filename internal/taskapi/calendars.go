package taskapi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/calendar"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the calendars (contract §4.2): named exclusion calendars
// stored at keyspace.Keys.Calendar, referenced by tasks and by calendars
// based on them. Every reference is a key under keyspace.Keys.CalendarUsers,
// written in the same Txn as the task (or calendar) that makes it, and a
// calendar is deleted only by a Txn that compares it has none: a calendar
// in use cannot disappear, and a task cannot list a calendar being deleted
// (its schedule Txn compares the calendar exists).
//
// Every node follows the calendars and keeps them compiled (follow.Calendars,
// a.cfg.Calendars); a task's fire times are computed with its calendars as the node
// knows them. A calendar replaced later applies to the fire times not yet
// come: a stored next fire time the new calendar excludes is skipped when
// it comes due.

// CreateCalendar stores a calendar; with replace it may overwrite one of
// the same name (its tasks keep it: the new rules apply to fire times not
// yet come).
func (a *Service) CreateCalendar(ctx context.Context, c *taskdv1.Calendar, replace bool) (*taskdv1.Calendar, error) {
	if c == nil {
		return nil, taskspec.Invalid("calendar", "is required")
	}
	c = proto.Clone(c).(*taskdv1.Calendar)
	c.Revision = 0
	if err := calendar.Validate("calendar", c); err != nil {
		var fe *calendar.FieldError
		if errors.As(err, &fe) {
			return nil, taskspec.Invalid(fe.Field, "%s", fe.Reason)
		}
		return nil, taskspec.Invalid("calendar", "%s", err.Error())
	}
	for attempt := 0; attempt < 5; attempt++ {
		cctx, cancel := a.etcdCtx(ctx)
		stored, err := a.cfg.Calendars.Read(cctx)
		if err != nil {
			cancel()
			return nil, err
		}
		old := stored[c.Name]
		if old != nil && !replace {
			cancel()
			return nil, fmt.Errorf("calendar.name: calendar %q exists (set replace to overwrite it): %w", c.Name, outcome.ErrAlreadyExists)
		}
		stored[c.Name] = c
		if _, err := calendar.Compile(c, func(name string) (*taskdv1.Calendar, bool) { s, ok := stored[name]; return s, ok }); err != nil {
			cancel()
			var fe *calendar.FieldError
			if errors.As(err, &fe) {
				return nil, taskspec.Invalid(fe.Field, "%s", fe.Reason)
			}
			return nil, taskspec.Invalid("calendar", "%s", err.Error())
		}
		baseRev := int64(0)
		if c.Base != "" {
			baseRev = stored[c.Base].GetRevision()
		}
		txn, err := a.cfg.Shapes.StoreCalendar(c, old.GetRevision(), baseRev, old.GetBase())
		if err != nil {
			cancel()
			return nil, err
		}
		tr, err := a.cfg.Writer.Commit(cctx, txn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("store calendar: %w", writepath.ErrOutcomeUnknown)
		}
		if !tr.Succeeded {
			continue // a calendar of the chain changed meanwhile: read again
		}
		c.Revision = tr.Header.Revision
		a.cfg.Calendars.Learn(c) // known here at once; the watch brings it to the others
		return c, nil
	}
	return nil, fmt.Errorf("store calendar %q: calendars kept changing: %w", c.Name, outcome.ErrConflict)
}

// GetCalendar returns one calendar.
func (a *Service) GetCalendar(ctx context.Context, name string) (*taskdv1.Calendar, error) {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	c, err := a.cfg.Calendars.ReadOne(cctx, name)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("calendar %q: %w", name, outcome.ErrNotFound)
	}
	return c, nil
}

// ListCalendars returns every calendar, by name.
func (a *Service) ListCalendars(ctx context.Context) ([]*taskdv1.Calendar, error) {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	stored, err := a.cfg.Calendars.Read(cctx)
	if err != nil {
		return nil, err
	}
	var out []*taskdv1.Calendar
	for _, c := range stored {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteCalendar removes a calendar that no task and no calendar uses
// (outcome.ErrFailedPrecondition naming a user otherwise).
func (a *Service) DeleteCalendar(ctx context.Context, name string) error {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	txn := a.cfg.Shapes.DeleteCalendar(name)
	resp, err := a.cfg.Writer.Commit(cctx, txn)
	if err != nil {
		return fmt.Errorf("delete calendar: %w", writepath.ErrOutcomeUnknown)
	}
	if resp.Succeeded {
		var old taskdv1.Calendar
		if kvs := writepath.DeletedCalendar(resp).Kvs; len(kvs) > 0 && proto.Unmarshal(kvs[0].Value, &old) == nil && old.Base != "" {
			// The reference to its base goes too (best effort: a stale
			// reference only keeps the base from being deleted).
			if _, err := a.cfg.Client.Delete(cctx, a.cfg.Keys.CalendarBaseRef(old.Base, name)); err != nil {
				a.log.Warn("remove a deleted calendar's reference to its base", "calendar", name, "error", err)
			}
		}
		a.cfg.Calendars.Forget(name)
		return nil
	}
	refusal := txn.Refusal(resp.Responses)
	if len(refusal.Calendar.Kvs) == 0 {
		return fmt.Errorf("calendar %q: %w", name, outcome.ErrNotFound)
	}
	user := "a user"
	if kvs := refusal.CalendarUser.Kvs; len(kvs) > 0 {
		rest := strings.TrimPrefix(string(kvs[0].Key), a.cfg.Keys.CalendarUsers(name))
		switch {
		case strings.HasPrefix(rest, "t/"):
			user = "task " + rest[strings.LastIndex(rest, "/")+1:]
		case strings.HasPrefix(rest, "n/"):
			parts := strings.Split(rest, "/")
			user = "non-durable task " + parts[len(parts)-1] + " on node " + parts[1]
		case strings.HasPrefix(rest, "c/"):
			user = "calendar " + strings.TrimPrefix(rest, "c/")
		}
	}
	return fmt.Errorf("calendar %q is in use by %s (and maybe others): %w", name, user, outcome.ErrFailedPrecondition)
}

// calendarsStillExist is read after a schedule Txn failed: a calendar one
// of its tasks lists was deleted meanwhile (the Txn compares each exists),
// which no retry cures.
func (a *Service) calendarsStillExist(ctx context.Context, groups []*group, recs []*storev1.TaskRecord) error {
	for _, g := range groups {
		for _, i := range g.idx {
			for j, name := range recs[i].Spec.Calendars {
				cctx, cancel := a.etcdCtx(ctx)
				resp, err := a.cfg.Client.Get(cctx, a.cfg.Keys.Calendar(name), clientv3.WithCountOnly())
				cancel()
				if err != nil {
					return err
				}
				if resp.Count == 0 {
					return taskspec.Invalid(fmt.Sprintf("calendars[%d]", j), "calendar %q was deleted", name)
				}
			}
		}
	}
	return nil
}
