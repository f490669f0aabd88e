package schedule

import (
	"encoding/binary"
	"hash/fnv"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Delay is how long after its fire time fire trigger t is due, for the
// task whose jitter seed is seed (a node uses the task's id and the
// trigger's name): from 0 up to, not including, t's jitter; none for once
// and on-start-up triggers. It depends only on t's rule, seed and fire, so
// every node, every restart and every preview give the same delay, and two
// tasks on one schedule are spread apart. It is kept below the gap to t's
// next fire time, so the delayed fire times keep their order (validation
// keeps a periodic trigger's jitter below its interval; a cron trigger's
// fire times may come closer than its jitter).
func Delay(t *taskdv1.Trigger, seed string, fire time.Time) time.Duration {
	j := t.GetJitter().AsDuration()
	if j <= 0 || (t.GetPeriodic() == nil && t.GetCron() == nil) {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(fire.UnixNano()))
	_, _ = h.Write(b[:])
	x := mix(h.Sum64())
	if next, ok := rawNext(t, fire); ok && next.Sub(fire) < j {
		j = next.Sub(fire)
	}
	return time.Duration(x % uint64(j))
}

// mix spreads a hash's bits (splitmix64's finalizer), so that fire times
// a step apart get unrelated delays.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
