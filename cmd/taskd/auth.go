package main

// Bearer tokens on the gRPC API: a tokens file (--tokens-file) lists the
// tokens the node accepts, each with the verbs it may use and the identities
// it may touch; an interceptor checks every TaskService call against them.
// docs/security.md describes the file and the rules.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/config"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The verbs a token can hold.
const (
	verbSchedule = "schedule"
	verbRead     = "read"
	verbControl  = "control"
	verbAdmin    = "admin"
)

var allVerbs = []string{verbSchedule, verbRead, verbControl, verbAdmin}

// methodVerbs maps each TaskService method to the verb it needs. A method
// missing here is refused to every token, so a new RPC stays closed until
// it is given a verb.
var methodVerbs = map[string]string{
	"ScheduleTask":    verbSchedule,
	"ScheduleTasks":   verbSchedule,
	"GetTask":         verbRead,
	"ListTasks":       verbRead,
	"ListRuns":        verbRead,
	"GetIdentity":     verbRead,
	"ListNodes":       verbRead,
	"PreviewTriggers": verbRead,
	"WatchEvents":     verbRead,
	"GetCalendar":     verbRead,
	"ListCalendars":   verbRead,
	"ListPauses":      verbRead,
	"CancelTask":      verbControl,
	"RunTaskNow":      verbControl,
	"PauseTask":       verbControl,
	"ResumeTask":      verbControl,
	"PauseIdentity":   verbControl,
	"ResumeIdentity":  verbControl,
	"UpdateTask":      verbControl,
	"MoveIdentity":    verbAdmin,
	"DrainNode":       verbAdmin,
	"CreateCalendar":  verbAdmin,
	"DeleteCalendar":  verbAdmin,
	"PauseKind":       verbAdmin,
	"ResumeKind":      verbAdmin,
}

// token is one line of the tokens file.
type token struct {
	id     string
	hash   [sha256.Size]byte // SHA-256 of the secret
	verbs  map[string]bool
	scopes []string // exact identities and prefixes ending in "*"; empty: all
}

// allows reports whether the token's scopes cover identity.
func (t *token) allows(identity string) bool {
	if len(t.scopes) == 0 {
		return true
	}
	for _, s := range t.scopes {
		if p, ok := strings.CutSuffix(s, "*"); ok {
			if strings.HasPrefix(identity, p) {
				return true
			}
		} else if s == identity {
			return true
		}
	}
	return false
}

// parseTokens reads a tokens file: one token per line,
// "ID SHA256-HEX VERBS [IDENTITIES]" with comma-separated verbs and
// identities; blank lines and lines starting with # are skipped.
func parseTokens(data string) (map[string]*token, error) {
	tokens := map[string]*token{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("line %d: want ID SHA256-HEX VERBS [IDENTITIES]", n)
		}
		t := &token{id: f[0], verbs: map[string]bool{}}
		if strings.ContainsAny(t.id, ".") {
			return nil, fmt.Errorf("line %d: token id %q contains a dot", n, t.id)
		}
		if _, dup := tokens[t.id]; dup {
			return nil, fmt.Errorf("line %d: token id %q listed twice", n, t.id)
		}
		h, err := hex.DecodeString(f[1])
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("line %d: the secret's hash is not 64 hex digits", n)
		}
		copy(t.hash[:], h)
		for _, v := range strings.Split(f[2], ",") {
			if !isVerb(v) {
				return nil, fmt.Errorf("line %d: unknown verb %q (want %s)", n, v, strings.Join(allVerbs, ","))
			}
			t.verbs[v] = true
		}
		if len(f) == 4 {
			for _, s := range strings.Split(f[3], ",") {
				if s == "" || strings.Contains(strings.TrimSuffix(s, "*"), "*") {
					return nil, fmt.Errorf("line %d: bad identity scope %q (an identity, or a prefix ending in *)", n, s)
				}
				t.scopes = append(t.scopes, s)
			}
		}
		tokens[t.id] = t
	}
	return tokens, sc.Err()
}

func isVerb(v string) bool {
	for _, w := range allVerbs {
		if v == w {
			return true
		}
	}
	return false
}

// authorizer checks calls against the tokens most recently loaded.
type authorizer struct {
	file   string
	tokens atomic.Pointer[map[string]*token]
}

// load reads the tokens file; on error the tokens already loaded stay.
func (a *authorizer) load() ([]string, error) {
	data, err := os.ReadFile(a.file)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %w", err)
	}
	tokens, err := parseTokens(string(data))
	if err != nil {
		return nil, fmt.Errorf("--tokens-file %s: %w", a.file, err)
	}
	a.tokens.Store(&tokens)
	ids := make([]string, 0, len(tokens))
	for id := range tokens {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// setupAuth applies the start-up policy: a node that serves the API on a
// non-loopback address needs --tokens-file or an explicit --insecure. It
// returns nil when the API is open (no tokens file).
func setupAuth(cfg config.Config, log hclog.Logger) (*authorizer, error) {
	if cfg.TokensFile == "" {
		if !cfg.Insecure && !isLoopback(cfg.Listen) {
			return nil, fmt.Errorf("--listen %s is not a loopback address: give --tokens-file to require bearer tokens, "+
				"or --insecure to serve the API open", cfg.Listen)
		}
		return nil, nil
	}
	a := &authorizer{file: cfg.TokensFile}
	ids, err := a.load()
	if err != nil {
		return nil, err
	}
	log.Info("tokens loaded", "file", cfg.TokensFile, "ids", strings.Join(ids, ","))
	return a, nil
}

// isLoopback reports whether listen's host is a loopback address or
// "localhost"; an empty host (all interfaces) is not.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// watch reloads the tokens file on SIGHUP until stop is called. A file
// that does not load is logged and the previous tokens stay.
func (a *authorizer) watch(log hclog.Logger) (stop func()) {
	if a == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-hup:
				ids, err := a.load()
				if err != nil {
					log.Error("tokens reload on SIGHUP failed; the previous tokens stay", "error", err)
					continue
				}
				log.Info("tokens reloaded", "file", a.file, "ids", strings.Join(ids, ","))
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-finished
	}
}

// serverOptions returns the interceptors that check tokens; none when the
// API is open.
func (a *authorizer) serverOptions() []grpc.ServerOption {
	if a == nil {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.unary),
		grpc.ChainStreamInterceptor(a.stream),
	}
}

// taskServiceMethod returns the method name of a TaskService call, or
// false for other services (health, reflection), which stay open.
func taskServiceMethod(fullMethod string) (string, bool) {
	return strings.CutPrefix(fullMethod, "/"+taskdv1.TaskService_ServiceDesc.ServiceName+"/")
}

// authenticate finds the token of the call's "authorization: Bearer
// ID.SECRET" metadata.
func (a *authorizer) authenticate(ctx context.Context) (*token, error) {
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
	t := (*a.tokens.Load())[id]
	sum := sha256.Sum256([]byte(secret))
	if t == nil {
		// Same work as for a known id, so that timing does not tell ids.
		var zero [sha256.Size]byte
		subtle.ConstantTimeCompare(sum[:], zero[:])
		return nil, status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	if subtle.ConstantTimeCompare(sum[:], t.hash[:]) != 1 {
		return nil, status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return t, nil
}

// requestIdentities returns the identities a request names, and whether
// it spans identities (a list or watch without an identity), which only an
// unscoped token may do. Requests that concern no identity (nodes,
// calendars, kinds, previews) return neither.
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
	case interface{ GetIdentity() string }:
		return []string{r.GetIdentity()}, false
	}
	return nil, false
}

// authorize checks that t may make a call of method with req.
func authorize(t *token, method string, req any) error {
	verb, known := methodVerbs[method]
	if !known {
		return status.Errorf(codes.PermissionDenied, "token %s: method %s is not open to tokens", t.id, method)
	}
	if !t.verbs[verb] {
		return status.Errorf(codes.PermissionDenied, "token %s lacks the verb %q needed by %s", t.id, verb, method)
	}
	ids, cross := requestIdentities(req)
	if cross && len(t.scopes) > 0 {
		return status.Errorf(codes.PermissionDenied,
			"token %s is scoped to identities %s: verb %q across all identities (%s without an identity) needs an unscoped token",
			t.id, strings.Join(t.scopes, ","), verb, method)
	}
	for _, id := range ids {
		if !t.allows(id) {
			return status.Errorf(codes.PermissionDenied, "token %s: identity %q is out of its scopes %s for verb %q",
				t.id, id, strings.Join(t.scopes, ","), verb)
		}
	}
	return nil
}

func (a *authorizer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method, ours := taskServiceMethod(info.FullMethod)
	if !ours {
		return handler(ctx, req)
	}
	t, err := a.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if err := authorize(t, method, req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a *authorizer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	method, ours := taskServiceMethod(info.FullMethod)
	if !ours {
		return handler(srv, ss)
	}
	t, err := a.authenticate(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &authorizedStream{ServerStream: ss, token: t, method: method})
}

// authorizedStream checks the request of a server stream (the first
// message received) before the handler sees it.
type authorizedStream struct {
	grpc.ServerStream
	token   *token
	method  string
	checked bool
}

func (s *authorizedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.checked {
		return nil
	}
	s.checked = true
	return authorize(s.token, s.method, m)
}
