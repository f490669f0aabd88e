package held

import (
	"hash/maphash"
	"iter"
)

// TaskSet holds an identity's entries by task id: an open-addressed hash
// set of *entry keyed by the entry's own id, with linear probing.
//
// It exists for memory: a node holds every pending task of its identities,
// and a Go map[string]*entry keeps the 16-byte key beside the 8-byte value
// in every slot and its groups stay under 7/8 full, about 45 bytes a task
// for an identity of ten. The set keeps one pointer a slot, at most 3/4
// full: about 13 bytes a task for an identity of ten, 16 for an identity
// of one (docs/performance.md, "Heap per pending task").
//
// A deleted slot holds tombstone until the next rehash, so entries never
// move while a caller ranges over all() and deletes (as a Go map allows);
// an entry put while ranging may or may not be seen, also as a Go map.
// Not safe for concurrent use: the node's mutex guards it.
type TaskSet struct {
	slots []*Entry // nil: never used; tombstone: deleted
	n     int      // live entries
	used  int      // live entries and tombstones
}

// tombstone marks a deleted slot: probes go on past it.
var tombstone = &Entry{}

// taskSetSeed is the hash seed of every TaskSet in the process.
var taskSetSeed = maphash.MakeSeed()

func (s *TaskSet) Len() int { return s.n }

// Get returns the entry of task id, nil if there is none.
func (s *TaskSet) Get(id string) *Entry {
	if s.n == 0 {
		return nil
	}
	mask := uint64(len(s.slots) - 1)
	for i := maphash.String(taskSetSeed, id) & mask; ; i = (i + 1) & mask {
		switch e := s.slots[i]; {
		case e == nil:
			return nil
		case e != tombstone && e.ID == id:
			return e
		}
	}
}

// Put sets e as the entry of task e.id, replacing the one there was.
func (s *TaskSet) Put(e *Entry) {
	if (s.used+1)*4 > len(s.slots)*3 {
		s.rehash(s.n + 1)
	}
	mask := uint64(len(s.slots) - 1)
	free := -1
	for i := maphash.String(taskSetSeed, e.ID) & mask; ; i = (i + 1) & mask {
		switch x := s.slots[i]; {
		case x == nil:
			if free < 0 {
				free = int(i)
				s.used++
			}
			s.slots[free] = e
			s.n++
			return
		case x == tombstone:
			if free < 0 {
				free = int(i)
			}
		case x.ID == e.ID:
			s.slots[i] = e
			return
		}
	}
}

// Del removes the entry of task id, if there is one.
func (s *TaskSet) Del(id string) {
	if s.n == 0 {
		return
	}
	mask := uint64(len(s.slots) - 1)
	for i := maphash.String(taskSetSeed, id) & mask; ; i = (i + 1) & mask {
		switch e := s.slots[i]; {
		case e == nil:
			return
		case e != tombstone && e.ID == id:
			s.slots[i] = tombstone
			if s.n--; s.n == 0 {
				// Empty: the slots go (an identity that drained a
				// burst does not keep its peak's table).
				s.slots, s.used = nil, 0
			}
			return
		}
	}
}

// rehash moves the live entries to a table sized for want of them, with
// no tombstones.
func (s *TaskSet) rehash(want int) {
	size := 2                              // an identity of one task: its pointer and a free slot
	for want*4 > size*3 || want*2 > size { // at most 1/2 full after a rehash
		size *= 2
	}
	old := s.slots
	s.slots, s.n, s.used = make([]*Entry, size), 0, 0
	for _, e := range old {
		if e != nil && e != tombstone {
			s.Put(e)
		}
	}
}

// All ranges over the entries in no particular order. The caller may
// delete (del, or put replacing) while ranging; an entry deleted before
// it is reached is not produced.
func (s *TaskSet) All() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		slots := s.slots
		for i := 0; i < len(slots); i++ {
			e := slots[i]
			if e == nil || e == tombstone {
				continue
			}
			if len(s.slots) != len(slots) || (len(slots) > 0 && &s.slots[0] != &slots[0]) {
				// Rehashed (a put while ranging): slots is a stale copy,
				// so e is produced only if it is still the set's.
				if s.Get(e.ID) != e {
					continue
				}
			} else if s.slots[i] != e {
				continue
			}
			if !yield(e) {
				return
			}
		}
	}
}
