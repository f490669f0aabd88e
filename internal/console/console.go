// Package console is taskd's web console: server-rendered pages under
// /ui/ on a node's --http port, showing the cluster's nodes, identities,
// tasks, runs and live events, and forms for the control actions.
//
// The console holds no privilege of its own: every page and every action
// is a call to the node's own gRPC API over a loopback connection, made
// through pkg/client (whose retry rules it shares with taskctl), carrying
// the viewer's bearer token (an Authorization header, or a cookie set by the
// console's token form) as the call's "authorization" metadata: the token
// goes with the context of the viewer's request (client.ContextWithToken),
// never with the client, which all viewers share. The API's
// interceptors therefore decide for the console exactly as they do for any
// client, with the same verbs and identity scopes; a refusal is shown with
// HTTP status 401 or 403.
//
// Templates, the style sheet and the script are embedded in the binary: no
// build step, no third-party assets.
//
// Lock: none over a request. The chart's counts (chart.mu) and the chart
// feed's last error (Console.feedMu) each have a leaf lock that guards only
// them.
package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/pkg/client"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// Defaults of Config.
const (
	defaultTimeout = 10 * time.Second
	// streamLife bounds one WatchEvents stream (of the chart feed and of a
	// viewer's live events): each then resumes from its last cursor, so
	// that no call to the API runs without a deadline.
	streamLife = 10 * time.Minute
)

// Config says which node the console shows and how to reach its API.
type Config struct {
	// Node is this node's name: it marks the node in the pages and its
	// runs in the chart.
	Node string
	// Target is the address of the node's own gRPC API (see LoopbackTarget).
	Target string
	// TLS, when not nil, is the client side of TLS to the API: the same
	// settings the node uses to dial other nodes.
	TLS *tls.Config
	// ServerName is the name the API's certificate is checked against when
	// TLS is on: the node's advertised address (host or host:port), which
	// is what other nodes check it against too.
	ServerName string
	// Hosts says which Host headers the console answers to (see
	// HostPolicy); nil means loopback addresses and localhost only.
	Hosts *HostPolicy
	// Logger, if set, logs the chart feed's connection changes.
	Logger hclog.Logger
	// Timeout bounds each unary call to the API; 0 means 10 s.
	Timeout time.Duration
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Console serves the pages. Create it with New, serve it under Prefix,
// feed the chart with Run and RunStarted, and Close it.
type Console struct {
	node    string
	timeout time.Duration
	now     func() time.Time
	log     hclog.Logger
	// api is the client of the node's API. It holds no token: each call
	// carries its viewer's (see call).
	api    *client.Client
	pages  map[string]*template.Template
	static http.Handler
	chart  *chart
	mux    *http.ServeMux
	hosts  *HostPolicy
	csrf   *csrfKeys

	// stopping ends the live-event streams of viewers when the console
	// closes, so an HTTP server's shutdown does not wait on them.
	stopping  context.Context
	stop      context.CancelFunc
	closeOnce sync.Once

	feedMu  sync.Mutex
	feedErr error // the chart feed's last error, nil while it streams
}

// New returns a console over the API at cfg.Target. The connection is made
// lazily, so New may be called before the API serves.
func New(cfg Config) (*Console, error) {
	if cfg.Target == "" {
		return nil, errors.New("console: no API target")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	opts := []client.Option{
		client.WithLazyConnect(),
		client.WithCallTimeout(timeout),
		// A task list page holds up to 1000 tasks with payload and data.
		client.WithDialOptions(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20))),
	}
	if cfg.TLS != nil {
		tc := cfg.TLS.Clone()
		if cfg.ServerName != "" {
			tc.ServerName = cfg.ServerName
			if h, _, err := net.SplitHostPort(cfg.ServerName); err == nil {
				tc.ServerName = h
			}
		}
		opts = append(opts, client.WithTLS(tc))
	}
	api, err := client.New(context.Background(), []string{cfg.Target}, opts...)
	if err != nil {
		return nil, fmt.Errorf("console: dial %s: %w", cfg.Target, err)
	}
	pages, err := parsePages()
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	csrf, err := newCSRFKeys()
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	hosts := cfg.Hosts
	if hosts == nil {
		hosts = NewHostPolicy(nil)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	stopping, stop := context.WithCancel(context.Background())
	c := &Console{
		node:     cfg.Node,
		timeout:  timeout,
		now:      now,
		log:      log.Named("console").With("node", cfg.Node),
		api:      api,
		pages:    pages,
		static:   http.StripPrefix(Prefix+"static/", http.FileServerFS(static)),
		chart:    newChart(now),
		hosts:    hosts,
		csrf:     csrf,
		stopping: stopping,
		stop:     stop,
	}
	c.mux = c.routes()
	return c, nil
}

// LoopbackTarget is the address at which this host reaches an API
// listening on addr: addr itself, or loopback when addr is a wildcard.
func LoopbackTarget(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	// A wildcard listener ("0.0.0.0" or "[::]") takes connections on every
	// loopback address of its host; Go reports --listen=0.0.0.0 as "[::]"
	// (one dual-stack socket), and a container may have no IPv6 loopback,
	// so the node dials IPv4's, as `taskd health` does.
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Close ends the viewers' live-event streams and closes the connection to
// the API. It may be called more than once.
func (c *Console) Close() {
	c.closeOnce.Do(func() {
		c.stop()
		_ = c.api.Close()
	})
}

// ServeHTTP serves the console's paths (under Prefix), for a request
// whose Host is this node's (421 otherwise: see HostPolicy).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.hosts.Allows(r.Host) {
		misdirected(w, r)
		return
	}
	// No page may be framed or load anything from elsewhere; the pages
	// have no inline script.
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"{$}", c.clusterPage)
	mux.HandleFunc("GET "+Prefix+"identities", c.identitiesPage)
	mux.HandleFunc("GET "+Prefix+"tasks", c.tasksPage)
	mux.HandleFunc("GET "+Prefix+"task", c.taskPage)
	mux.HandleFunc("GET "+Prefix+"events", c.eventsPage)
	mux.HandleFunc("GET "+Prefix+"events/stream", c.eventStream)
	mux.HandleFunc("POST "+Prefix+"action", c.action)
	mux.HandleFunc("GET "+Prefix+"token", c.tokenPage)
	mux.HandleFunc("POST "+Prefix+"token", c.setToken)
	mux.Handle("GET "+Prefix+"static/", c.static)
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, &httpError{status: http.StatusNotFound, msg: "no console page at " + r.URL.Path})
	})
	return mux
}

// RunStarted counts, for the chart, a run this node started at the time
// started for the fire time fired (zero for a run-now run, which has
// none). The node's event listener calls it for each STARTED event, so
// this node's chart needs no event stream (and no token).
func (c *Console) RunStarted(node string, started, fired time.Time) {
	lag := time.Duration(-1)
	if !fired.IsZero() {
		lag = max(started.Sub(fired), 0)
	}
	c.chart.add(node, started, lag)
}

// Run feeds the chart with the runs other nodes start, and their fire lag
// (a STARTED event's time minus its fire time), read from the cluster's
// event stream, until ctx ends (this node's come from RunStarted).
// With bearer tokens required the console has none of its own: the stream
// is refused and the chart shows this node only (the cluster page says so).
func (c *Console) Run(ctx context.Context) {
	cursor := ""
	b := backoff.New(time.Second, time.Minute)
	for {
		var err error
		cursor, err = c.feed(ctx, cursor)
		if ctx.Err() != nil {
			return
		}
		c.setFeedErr(err)
		if err == nil { // the stream reached its life; resume at once
			b.Reset()
			continue
		}
		if code(err) == "OutOfRange" { // the cursor expired: start from now
			cursor = ""
		}
		if !b.Wait(ctx) {
			return
		}
	}
}

// feed streams STARTED events from cursor until the stream ends; it returns
// the cursor of the last event seen, and nil when the stream just reached
// its deadline.
func (c *Console) feed(ctx context.Context, cursor string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, streamLife)
	defer cancel()
	stream, err := c.api.Watch(ctx, client.EventFilter{Types: []client.EventType{"STARTED"}, Cursor: cursor})
	if err != nil {
		return cursor, err
	}
	for {
		evs, err := stream.Recv()
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return cursor, nil
			}
			return cursor, err
		}
		c.setFeedErr(nil)
		for _, ev := range evs {
			cursor = ev.Cursor
			if ev.Node != c.node { // this node's runs come from RunStarted, even without the stream
				lag := time.Duration(-1) // a run-now run has no fire time
				if !ev.FireTime.IsZero() {
					lag = max(ev.Time.Sub(ev.FireTime), 0)
				}
				c.chart.add(ev.Node, ev.Time, lag)
			}
		}
	}
}

// setFeedErr records the chart feed's state, logging each change.
func (c *Console) setFeedErr(err error) {
	c.feedMu.Lock()
	defer c.feedMu.Unlock()
	if (err == nil) != (c.feedErr == nil) {
		switch {
		case code(err) == "Unauthenticated" || code(err) == "PermissionDenied":
			// Expected with bearer tokens required: the console has none.
			c.log.Info("chart feed: the API refuses the console's own event stream (it holds no token); the chart shows this node's runs only", "error", err)
		case err != nil:
			c.log.Warn("chart feed: the cluster's event stream failed; the chart shows this node's runs only until it is back", "error", err)
		default:
			c.log.Info("chart feed: following the cluster's event stream")
		}
	}
	c.feedErr = err
}

// feedError returns the chart feed's last error.
func (c *Console) feedError() error {
	c.feedMu.Lock()
	defer c.feedMu.Unlock()
	return c.feedErr
}
