package main

import (
	"net/http"
	"net/http/pprof"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/console"
	"github.com/taskd/taskd/pkg/tokens"
)

// mountPprof serves Go's profiling endpoints under /debug/pprof/ on mux
// (--pprof). A heap profile or trace holds what the node holds in memory,
// task data included, so they are guarded as the console is: only under
// the node's own Host names (hosts), and with bearer tokens on only for an
// unscoped token with the verb admin.
func mountPprof(mux *http.ServeMux, hosts *console.HostPolicy, auth *authorizer) {
	guard := func(h http.HandlerFunc) http.Handler { return hosts.Guard(auth.requireAdmin(h)) }
	mux.Handle("/debug/pprof/", guard(pprof.Index))
	mux.Handle("/debug/pprof/cmdline", guard(pprof.Cmdline))
	mux.Handle("/debug/pprof/profile", guard(pprof.Profile))
	mux.Handle("/debug/pprof/symbol", guard(pprof.Symbol))
	mux.Handle("/debug/pprof/trace", guard(pprof.Trace))
}

// requireAdmin serves next only for a request whose "Authorization: Bearer
// ID.SECRET" header is a token with the verb admin and no identity scopes
// (401 without a valid token, 403 for another); with the API open (a nil
// authorizer) it is next.
func (a *authorizer) requireAdmin(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md := metadata.MD{}
		if h := r.Header.Get("Authorization"); h != "" {
			md.Set("authorization", h)
		}
		t, err := a.Authenticate(metadata.NewIncomingContext(r.Context(), md))
		if err != nil {
			code := http.StatusUnauthorized
			if status.Code(err) != codes.Unauthenticated { // the stored tokens are not loaded yet
				code = http.StatusServiceUnavailable
			}
			http.Error(w, "pprof: "+status.Convert(err).Message(), code)
			return
		}
		if !t.Verbs[tokens.VerbAdmin] || len(t.Scopes) > 0 {
			http.Error(w, "pprof: token "+t.ID+" may not read the node's memory: that needs an unscoped token with the verb \"admin\"", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wantsVersion reports whether the command line asks for --version (or
// -version), which is answered before any option is read.
func wantsVersion(args []string) bool {
	return slices.Contains(args, "--version") || slices.Contains(args, "-version")
}
