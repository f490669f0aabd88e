package record

import (
	"strconv"
	"time"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is a trigger's jitter as a task record applies it: a fire time
// is due its jitter's delay after it (schedule.Delay, seeded by the task's
// id and the trigger's name). The stored progress is the undelayed fire
// time, as is a run's fire time; lateness counts from the delayed instant.

// DueOf is when fire time fire of trigger i of task taskID's triggers is
// due: fire delayed by the trigger's jitter.
func DueOf(taskID string, triggers []*taskdv1.Trigger, i int, fire time.Time) time.Time {
	if i < 0 || i >= len(triggers) || triggers[i].GetJitter().AsDuration() <= 0 {
		return fire
	}
	return fire.Add(schedule.Delay(triggers[i], taskID+"\x00"+nameIn(triggers, i), fire))
}

// NextDue is the earliest instant a task's triggers are due at by their
// stored progress states (on-start-up triggers aside, which have none): a
// NEXT_SCHEDULED event's next.
func NextDue(taskID string, triggers []*taskdv1.Trigger, states []*storev1.TriggerState) (time.Time, bool) {
	var at time.Time
	ok := false
	for i, st := range states {
		if st.GetNext() == nil {
			continue
		}
		if t := DueOf(taskID, triggers, i, st.Next.AsTime()); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// nameIn is the name of trigger i of ts, as TriggerName reads it.
func nameIn(ts []*taskdv1.Trigger, i int) string {
	if ts[i].GetName() == "" {
		return ServerNamePrefix + strconv.Itoa(i)
	}
	return ts[i].GetName()
}
