package tokens

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// methodVerbs maps each method of the taskd services to the verb it needs.
// A method of those services missing here is refused to every token, so a
// new RPC stays closed until it is given a verb. Other services (health,
// reflection) stay open.
var methodVerbs = map[string]string{}

func init() {
	task := map[string]string{
		"ScheduleTask":    VerbSchedule,
		"ScheduleTasks":   VerbSchedule,
		"GetTask":         VerbRead,
		"ListTasks":       VerbRead,
		"ListRuns":        VerbRead,
		"GetIdentity":     VerbRead,
		"ListNodes":       VerbRead,
		"PreviewTriggers": VerbRead,
		"WatchEvents":     VerbRead,
		"GetCalendar":     VerbRead,
		"ListCalendars":   VerbRead,
		"ListPauses":      VerbRead,
		"CancelTask":      VerbControl,
		"RunTaskNow":      VerbControl,
		"PauseTask":       VerbControl,
		"ResumeTask":      VerbControl,
		"PauseIdentity":   VerbControl,
		"ResumeIdentity":  VerbControl,
		"UpdateTask":      VerbControl,
		"DeleteTask":      VerbControl,
		"MoveIdentity":    VerbAdmin,
		"DrainNode":       VerbAdmin,
		"CreateCalendar":  VerbAdmin,
		"DeleteCalendar":  VerbAdmin,
		"PauseKind":       VerbAdmin,
		"ResumeKind":      VerbAdmin,
	}
	for m, v := range task {
		methodVerbs["/"+taskdv1.TaskService_ServiceDesc.ServiceName+"/"+m] = v
	}
	for _, m := range []string{"CreateToken", "ListTokens", "RevokeToken"} {
		methodVerbs["/"+taskdv1.TokenService_ServiceDesc.ServiceName+"/"+m] = VerbAdmin
	}
	methodVerbs["/"+taskdv1.WorkerService_ServiceDesc.ServiceName+"/Work"] = VerbWork
}

// ours reports whether fullMethod belongs to a taskd service, which needs a
// token.
func ours(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/"+taskdv1.TaskService_ServiceDesc.ServiceName+"/") ||
		strings.HasPrefix(fullMethod, "/"+taskdv1.TokenService_ServiceDesc.ServiceName+"/") ||
		strings.HasPrefix(fullMethod, "/"+taskdv1.WorkerService_ServiceDesc.ServiceName+"/")
}

// Authorizer checks calls against the tokens of a file and those stored in
// etcd. The zero value accepts no token; set the file's tokens with
// SetFile and the stored ones with a Follower.
type Authorizer struct {
	file    atomic.Pointer[map[string]*Token]
	stored  *Follower
	streams streamRegistry
	// fileGone remembers the file's tokens that reloads removed, to tell
	// their holders (revoked.go).
	fileGone goneSet
}

// NewAuthorizer returns an authorizer over the file's tokens and, when
// stored is not nil, the tokens stored in etcd.
func NewAuthorizer(file map[string]*Token, stored *Follower) *Authorizer {
	a := &Authorizer{}
	a.SetFile(file)
	if stored != nil {
		a.Follow(stored)
	}
	return a
}

// SetFile replaces the tokens of the file (after a reload). The streams
// opened with a token the new file no longer grants (its line removed, its
// secret, verbs or scopes changed) are ended before it returns.
func (a *Authorizer) SetFile(tokens map[string]*Token) {
	if tokens == nil {
		tokens = map[string]*Token{}
	}
	if before := a.file.Load(); before != nil {
		a.fileGone.update(*before, tokens, goneFromFile, time.Now())
	}
	a.file.Store(&tokens)
	a.recheck()
}

// Follow makes the authorizer honour the tokens stored in etcd, as f sees
// them, and end the streams of a stored token f sees revoked or changed.
// Call it before the authorizer checks its first call.
func (a *Authorizer) Follow(f *Follower) {
	a.stored = f
	f.onChange(a.recheck)
}

// FileTokens returns the tokens of the file.
func (a *Authorizer) FileTokens() map[string]*Token { return *a.file.Load() }

// Stored returns the follower of the stored tokens, or nil.
func (a *Authorizer) Stored() *Follower { return a.stored }

// lookup finds token id: the file's first, then the stored ones.
func (a *Authorizer) lookup(id string) (*Token, error) {
	if t := (*a.file.Load())[id]; t != nil {
		return t, nil
	}
	if a.stored == nil {
		return nil, nil
	}
	t, loaded := a.stored.Lookup(id)
	if t == nil && !loaded {
		return nil, status.Error(codes.Unavailable, "the tokens stored in etcd are not loaded yet; try again")
	}
	return t, nil
}

// Authenticate finds the token of the call's "authorization: Bearer
// ID.SECRET" metadata: UNAUTHENTICATED without one, or for an unknown id or
// a wrong secret, with one message for both so that ids cannot be probed;
// a token this node saw revoked or removed from its file, presented with
// its secret, is told so (revoked.go).
func (a *Authorizer) Authenticate(ctx context.Context) (*Token, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) != 1 {
		return nil, status.Error(codes.Unauthenticated, "a bearer token is required (authorization: Bearer ID.SECRET)")
	}
	bearer, ok := strings.CutPrefix(vals[0], "Bearer ")
	id, secret, ok2 := strings.Cut(bearer, ".")
	if !ok || !ok2 {
		return nil, status.Error(codes.Unauthenticated, "malformed bearer token (want Bearer ID.SECRET)")
	}
	sum := sha256.Sum256([]byte(secret))
	t, err := a.lookup(id)
	if err != nil {
		return nil, err
	}
	want := t
	if want == nil {
		// Same work as for a known id, so that timing does not tell ids.
		want = &Token{}
	}
	if subtle.ConstantTimeCompare(sum[:], want.Hash[:]) != 1 || t == nil {
		return nil, status.Error(codes.Unauthenticated, a.rejection(id, sum))
	}
	return t, nil
}

// rejection is the message of a refused token: why it is gone when this
// node saw the very token (id and secret) go, else the one message for an
// unknown id and a wrong secret. Both lookups are made every time.
func (a *Authorizer) rejection(id string, sum [sha256.Size]byte) string {
	g, fromFile := a.fileGone.find(id, sum)
	var stored gone
	var wasStored bool
	if a.stored != nil {
		stored, wasStored = a.stored.gone.find(id, sum)
	}
	switch {
	case fromFile:
		return g.message()
	case wasStored:
		return stored.message()
	}
	return genericRejected
}

// requestIdentities returns the identities a request names, and whether
// it spans identities (a list or watch without an identity), which only an
// unscoped token may do. Requests that concern no identity (nodes,
// calendars, kinds, previews, tokens) return neither.
func requestIdentities(req any) (ids []string, crossIdentity bool) {
	switch r := req.(type) {
	case *taskdv1.ScheduleTaskRequest:
		return []string{r.GetTask().GetIdentity()}, false
	case *taskdv1.ScheduleTasksRequest:
		for _, t := range r.GetTasks() {
			ids = append(ids, t.GetIdentity())
		}
		return ids, false
	case *taskdv1.UpdateTaskRequest:
		ids = []string{r.GetIdentity()}
		if s := r.GetSpec().GetIdentity(); s != "" && s != r.GetIdentity() {
			ids = append(ids, s)
		}
		return ids, false
	case *taskdv1.ListTasksRequest:
		if r.GetIdentity() == "" {
			return nil, true
		}
		return []string{r.GetIdentity()}, false
	case *taskdv1.WatchEventsRequest:
		if r.GetIdentity() == "" {
			return nil, true
		}
		return []string{r.GetIdentity()}, false
	case *taskdv1.WorkRequest:
		// A worker is handed runs of any identity its node owns.
		return nil, true
	case interface{ GetIdentity() string }:
		return []string{r.GetIdentity()}, false
	}
	return nil, false
}

// Authorize checks that t may make a call of fullMethod with req:
// PERMISSION_DENIED naming the verb or the identity when it may not.
func Authorize(t *Token, fullMethod string, req any) error {
	method := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	verb, known := methodVerbs[fullMethod]
	if !known {
		return status.Errorf(codes.PermissionDenied, "token %s: method %s is not open to tokens", t.ID, method)
	}
	if !t.Verbs[verb] {
		return status.Errorf(codes.PermissionDenied, "token %s lacks the verb %q needed by %s", t.ID, verb, method)
	}
	ids, cross := requestIdentities(req)
	if cross && len(t.Scopes) > 0 {
		return status.Errorf(codes.PermissionDenied,
			"token %s is scoped to identities %s: verb %q across all identities (%s without an identity) needs an unscoped token",
			t.ID, strings.Join(t.Scopes, ","), verb, method)
	}
	for _, id := range ids {
		if !t.Allows(id) {
			return status.Errorf(codes.PermissionDenied, "token %s: identity %q is out of its scopes %s for verb %q",
				t.ID, id, strings.Join(t.Scopes, ","), verb)
		}
	}
	return nil
}

type callerKey struct{}

// Caller returns the token that authorized the call of ctx, or nil when the
// node checks no tokens.
func Caller(ctx context.Context) *Token {
	t, _ := ctx.Value(callerKey{}).(*Token)
	return t
}

// ServerOptions returns the interceptors that check every call of the
// taskd services.
func (a *Authorizer) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.unary),
		grpc.ChainStreamInterceptor(a.stream),
	}
}

func (a *Authorizer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !ours(info.FullMethod) {
		return handler(ctx, req)
	}
	t, err := a.Authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if err := Authorize(t, info.FullMethod, req); err != nil {
		return nil, err
	}
	return handler(context.WithValue(ctx, callerKey{}, t), req)
}
