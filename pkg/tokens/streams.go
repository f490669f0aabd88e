package tokens

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Revocation of open streams. A stream is authorized once, when it opens
// (and its first message is checked), but it can outlive its token: a
// revocation through the TokenService or a tokens-file reload must end it,
// or a watcher keeps reading events and a worker keeps taking runs after
// its token is gone. So each open stream of a taskd service is registered
// under its token id, and every change of the tokens (the follower applied
// a change, the file was reloaded) checks the open streams again: one whose
// token is gone, whose secret changed, or which no longer authorizes the
// stream's method and request has its context cancelled, and ends with
// UNAUTHENTICATED. The registry holds only the streams that are open: a
// stream leaves it when its handler returns.

// errRevoked is what a stream whose token was revoked ends with.
func errRevoked(id string) error {
	return status.Errorf(codes.Unauthenticated,
		"token %s was revoked (or changed) while this stream was open: the stream is ended; reconnect with a valid token", id)
}

// openStream is one registered stream.
type openStream struct {
	token  *Token // the token that opened it
	method string
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	req     any // the first message, once checked; nil before
	revoked bool
}

// streamRegistry holds the open streams by token id.
type streamRegistry struct {
	mu   sync.Mutex
	byID map[string]map[*openStream]struct{}
}

func (r *streamRegistry) add(s *openStream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]map[*openStream]struct{}{}
	}
	set := r.byID[s.token.ID]
	if set == nil {
		set = map[*openStream]struct{}{}
		r.byID[s.token.ID] = set
	}
	set[s] = struct{}{}
}

func (r *streamRegistry) remove(s *openStream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.byID[s.token.ID]
	delete(set, s)
	if len(set) == 0 {
		delete(r.byID, s.token.ID)
	}
}

// all returns the open streams.
func (r *streamRegistry) all() []*openStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*openStream
	for _, set := range r.byID {
		for s := range set {
			out = append(out, s)
		}
	}
	return out
}

// OpenStreams returns how many streams opened with token id are open (for
// metrics and tests).
func (a *Authorizer) OpenStreams(id string) int {
	a.streams.mu.Lock()
	defer a.streams.mu.Unlock()
	return len(a.streams.byID[id])
}

// stillValid reports whether s's token, as the node now knows it, still
// authorizes s: the same id with the same secret and, once the first
// message was authorized, holding the verb of the method and covering the
// request's identities.
func (a *Authorizer) stillValid(s *openStream) bool {
	cur, err := a.lookup(s.token.ID)
	if err != nil {
		// Not in the file, and the stored tokens are not listed yet: the
		// stream was opened with a file token (a stored one implies they
		// were listed, which stays so), whose line is gone.
		return false
	}
	if cur == nil || cur.Hash != s.token.Hash {
		return false
	}
	s.mu.Lock()
	req := s.req
	s.mu.Unlock()
	if req == nil {
		// Not authorized yet: the first message will be, against the
		// token as it is then.
		return true
	}
	return Authorize(cur, s.method, req) == nil
}

// check ends s if its token no longer authorizes it; it reports whether s
// is still valid.
func (a *Authorizer) check(s *openStream) bool {
	if a.stillValid(s) {
		return true
	}
	s.mu.Lock()
	s.revoked = true
	s.mu.Unlock()
	s.cancel(errRevoked(s.token.ID))
	return false
}

// recheck checks every open stream against the tokens now in force; it is
// called after each change of them.
func (a *Authorizer) recheck() {
	for _, s := range a.streams.all() {
		a.check(s)
	}
}

func (a *Authorizer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !ours(info.FullMethod) {
		return handler(srv, ss)
	}
	t, err := a.Authenticate(ss.Context())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(nil)
	s := &openStream{token: t, method: info.FullMethod, cancel: cancel}
	a.streams.add(s)
	defer a.streams.remove(s)
	// A change applied between Authenticate and add was checked against the
	// streams registered then, without this one: check it again now.
	if !a.check(s) {
		return errRevoked(t.ID)
	}
	err = handler(srv, &authorizedStream{ServerStream: ss, ctx: context.WithValue(ctx, callerKey{}, t), a: a, open: s})
	if s.isRevoked() {
		return errRevoked(t.ID)
	}
	return err
}

func (s *openStream) isRevoked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revoked
}

// authorizedStream checks the request of a server stream (the first
// message received) before the handler sees it, gives the handler a context
// that ends when the token is revoked, and refuses to send or receive once
// it is.
type authorizedStream struct {
	grpc.ServerStream
	ctx     context.Context
	a       *Authorizer
	open    *openStream
	checked bool
}

func (s *authorizedStream) Context() context.Context { return s.ctx }

func (s *authorizedStream) SendMsg(m any) error {
	if s.open.isRevoked() {
		return errRevoked(s.open.token.ID)
	}
	return s.ServerStream.SendMsg(m)
}

func (s *authorizedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.open.isRevoked() {
		return errRevoked(s.open.token.ID)
	}
	if s.checked {
		return nil
	}
	s.checked = true
	if err := Authorize(s.open.token, s.open.method, m); err != nil {
		return err
	}
	// From now on a change of the token is checked against this request's
	// identities too; one applied since the stream opened is checked here.
	s.open.mu.Lock()
	s.open.req = m
	s.open.mu.Unlock()
	if !s.a.check(s.open) {
		return errRevoked(s.open.token.ID)
	}
	return nil
}
