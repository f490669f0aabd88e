package schedule

import (
	"fmt"
	"sync"
	"time"

	"github.com/taskd/taskd/pkg/cron"
)

// cronCacheSize bounds the parsed expressions kept. Tasks share few
// distinct expressions, so a pending cron task costs no more memory than a
// periodic one: its trigger points at a shared parse.
const cronCacheSize = 4096

type cronKey struct{ expr, zone string }

var cronCache = struct {
	sync.Mutex
	m map[cronKey]*cron.Expression
}{m: make(map[cronKey]*cron.Expression)}

// CronExpression parses expr in the IANA zone (empty: UTC), from a shared
// cache. Errors are *cron.SyntaxError for the expression and *ZoneError for
// the zone.
func CronExpression(expr, zone string) (*cron.Expression, error) {
	k := cronKey{expr, zone}
	cronCache.Lock()
	e, ok := cronCache.m[k]
	cronCache.Unlock()
	if ok {
		return e, nil
	}
	loc, err := Location(zone)
	if err != nil {
		return nil, err
	}
	e, err = cron.Parse(expr, loc)
	if err != nil {
		return nil, err
	}
	cronCache.Lock()
	if len(cronCache.m) >= cronCacheSize {
		for old := range cronCache.m { // evict an arbitrary entry
			delete(cronCache.m, old)
			break
		}
	}
	cronCache.m[k] = e
	cronCache.Unlock()
	return e, nil
}

// ZoneError says a time zone name is not a known IANA zone.
type ZoneError struct{ Zone string }

func (e *ZoneError) Error() string {
	if len(e.Zone) > cron.MaxZoneLen {
		return fmt.Sprintf("time zone name is %d bytes, the limit is %d", len(e.Zone), cron.MaxZoneLen)
	}
	return "unknown time zone " + quote(e.Zone) + " (an IANA name such as Europe/Berlin, or empty for UTC)"
}

func quote(s string) string { return "\"" + s + "\"" }

// Location loads an IANA zone; empty and "UTC" are UTC. "Local" is refused:
// a schedule must mean the same on every node.
func Location(zone string) (*time.Location, error) {
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	if zone == "Local" || len(zone) > cron.MaxZoneLen {
		return nil, &ZoneError{Zone: zone}
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, &ZoneError{Zone: zone}
	}
	return loc, nil
}
