package tokens

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Telling a holder that their token was revoked. A revoked token's record
// is deleted, so without a memory of it a node can only say "invalid
// bearer token", as for an id that never existed. Saying "unknown id"
// apart from "wrong secret" would tell anyone which ids exist, so the
// node remembers, for the tokens it saw go, the pair of id and secret
// hash: a call that presents exactly such a pair comes from someone who
// held the token, and is told it was revoked (or removed from the tokens
// file) and when; any other call gets the one message it always got.
//
// The memory is this node's since it started, bounded by MaxRemembered
// (the oldest is forgotten first): a token revoked before the node started
// is not told apart from an unknown one.

// MaxRemembered bounds how many gone tokens a node remembers, per source
// (stored and file).
const MaxRemembered = 1024

// Why a token is gone.
const (
	goneRevoked     = "was revoked"
	goneFromFile    = "was removed from this node's tokens file (or its secret replaced)"
	genericRejected = "invalid bearer token: unknown token id or wrong secret"
)

// gone is a remembered token.
type gone struct {
	id  string
	why string
	at  time.Time
}

// goneSet remembers gone tokens by a digest of id and secret hash, so that
// a lookup costs the same whether or not the pair is there.
type goneSet struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]gone
	order [][sha256.Size]byte // oldest first
}

// goneKey is the digest of a token's id and secret hash.
func goneKey(id string, hash [sha256.Size]byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(hash[:])
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// update records the tokens of before whose id and secret are not in
// after, as gone for why at now, and forgets those of after (a line put
// back in the file).
func (s *goneSet) update(before, after map[string]*Token, why string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[[sha256.Size]byte]gone{}
	}
	for _, t := range after {
		delete(s.byKey, goneKey(t.ID, t.Hash))
	}
	for id, t := range before {
		if a := after[id]; a != nil && a.Hash == t.Hash {
			continue
		}
		k := goneKey(t.ID, t.Hash)
		if _, ok := s.byKey[k]; !ok {
			s.order = append(s.order, k)
		}
		s.byKey[k] = gone{id: t.ID, why: why, at: now}
	}
	// Drop the oldest beyond the bound, and keys forgotten above.
	keep := s.order[:0]
	for _, k := range s.order {
		if _, ok := s.byKey[k]; ok {
			keep = append(keep, k)
		}
	}
	s.order = keep
	for len(s.order) > MaxRemembered {
		delete(s.byKey, s.order[0])
		s.order = s.order[1:]
	}
}

// find returns the gone token of id whose secret hashes to hash.
func (s *goneSet) find(id string, hash [sha256.Size]byte) (gone, bool) {
	k := goneKey(id, hash)
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.byKey[k]
	return g, ok
}

// message is what a call presenting g's token is told.
func (g gone) message() string {
	return "invalid bearer token: token " + g.id + " " + g.why + " (at " + g.at.UTC().Format(time.RFC3339) +
		", as this node saw it); ask an admin for a new token"
}
