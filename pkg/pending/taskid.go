package pending

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case: its order matches
// byte order, so ids compare like their creation times.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// TaskIDLen is the length of a task id.
const TaskIDLen = 26

// IDSource makes task ids: 48 bits of Unix milliseconds then 80 bits that
// only grow within one millisecond (random start, then incremented), so ids
// from one source are strictly increasing and ids sort by creation time.
type IDSource struct {
	mu     sync.Mutex
	lastMs uint64
	hi     uint16
	lo     uint64
	now    func() time.Time
}

// NewIDSource returns a source reading the wall clock.
func NewIDSource() *IDSource { return &IDSource{now: time.Now} }

// New returns the next id.
func (s *IDSource) New() string {
	s.mu.Lock()
	now := s.now
	if now == nil { // the zero IDSource reads the wall clock
		now = time.Now
	}
	ms := uint64(now().UnixMilli())
	if ms <= s.lastMs {
		ms = s.lastMs
		s.lo++
		if s.lo == 0 {
			s.hi++
		}
	} else {
		var b [10]byte
		_, _ = rand.Read(b[:])
		s.hi = binary.BigEndian.Uint16(b[:2]) & 0x7fff // room to increment
		s.lo = binary.BigEndian.Uint64(b[2:])
		s.lastMs = ms
	}
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], ms<<16|uint64(s.hi))
	binary.BigEndian.PutUint64(raw[8:], s.lo)
	s.mu.Unlock()
	return encode128(raw)
}

// encode128 writes 128 bits as 26 base32 characters, most significant first.
func encode128(raw [16]byte) string {
	hi := binary.BigEndian.Uint64(raw[:8])
	lo := binary.BigEndian.Uint64(raw[8:])
	var out [TaskIDLen]byte
	for i := TaskIDLen - 1; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// ValidTaskID reports whether s has the shape of a task id.
func ValidTaskID(s string) bool {
	if len(s) != TaskIDLen || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') || c == 'i' || c == 'l' || c == 'o' || c == 'u' {
			return false
		}
	}
	return true
}
