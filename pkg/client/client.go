package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/backoff"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Client talks to a taskd cluster through any of its nodes: every node
// answers every call, so the client needs no routing. It holds one
// connection per endpoint and moves to the next endpoint when one stops
// answering. A Client is safe for concurrent use; Close it when done.
type Client struct {
	endpoints []string
	conns     []*grpc.ClientConn
	apis      []taskdv1.TaskServiceClient
	tokens    []taskdv1.TokenServiceClient
	// cur is the endpoint calls go to first; it moves on when that
	// endpoint fails with UNAVAILABLE or times out.
	cur atomic.Uint32
	o   options
	// dial are the options of every connection, also a Worker's to each node.
	dial []grpc.DialOption
	// tlsCreds are the TLS credentials, nil in plain text: New's error
	// names the client-certificate problem they saw.
	tlsCreds *certCreds
}

// Defaults of the options.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultCallTimeout = 10 * time.Second
	DefaultAttempts    = 5
	DefaultBackoff     = 50 * time.Millisecond
	DefaultMaxBackoff  = 2 * time.Second
)

type options struct {
	tls         *tls.Config
	token       string
	dialTimeout time.Duration
	callTimeout time.Duration
	attempts    int
	backoff     time.Duration
	maxBackoff  time.Duration
	dialOptions []grpc.DialOption
	lazy        bool
	keepKeyless bool
}

// Option sets up a Client.
type Option func(*options)

// WithTLS connects over TLS with the given configuration (plain text
// without it).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithToken sends "authorization: Bearer TOKEN" with every call, as made by
// `taskctl token create` (a call whose context has its own token,
// ContextWithToken, sends that one instead).
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithDialTimeout bounds how long New waits for the first endpoint to
// answer (default 5 s).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithCallTimeout bounds each attempt of a call (default 10 s); the
// caller's context bounds the call with all its retries.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithRetries sets how many attempts a retryable call gets (default 5; 1
// turns retries off) and the backoff between them (default 50 ms doubling
// up to 2 s, with jitter).
func WithRetries(attempts int, initial, max time.Duration) Option {
	return func(o *options) { o.attempts, o.backoff, o.maxBackoff = attempts, initial, max }
}

// WithDialOptions adds gRPC dial options (interceptors, keepalive, ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithLazyConnect makes New return at once, without waiting for an
// endpoint to answer: the first call connects, and when no node answers it
// fails with the reason the connection gave (connection refused, a TLS
// problem) instead of New's "no endpoint answered". For a client made
// before its node serves (the console of a starting node) or one that
// makes a single call (taskctl).
func WithLazyConnect() Option { return func(o *options) { o.lazy = true } }

// WithoutGeneratedKeys makes Schedule and ScheduleMany send a durable task
// without an IdempotencyKey as it is, instead of giving it a random key:
// the task is stored without a key, as the caller wrote it (taskctl's
// tasks are), and because nothing then tells a retry from a second task,
// such a call is sent once only, as RunNow is.
func WithoutGeneratedKeys() Option { return func(o *options) { o.keepKeyless = true } }

// New connects to a cluster through endpoints (each "host:port" of a
// node's gRPC API) and returns once one of them answers, or with an error
// naming them when none does within the dial timeout.
func New(ctx context.Context, endpoints []string, opts ...Option) (*Client, error) {
	o := options{
		dialTimeout: DefaultDialTimeout,
		callTimeout: DefaultCallTimeout,
		attempts:    DefaultAttempts,
		backoff:     DefaultBackoff,
		maxBackoff:  DefaultMaxBackoff,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(endpoints); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	var tlsCreds *certCreds
	if o.tls != nil {
		tlsCreds = TLSCredentials(o.tls).(*certCreds)
		creds = tlsCreds
	}
	// The token credentials are there without a token too: a call's
	// context may carry one (ContextWithToken).
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(callToken(o.token))},
		o.dialOptions...)
	c := &Client{endpoints: endpoints, o: o, dial: dial, tlsCreds: tlsCreds}
	for _, ep := range endpoints {
		conn, err := grpc.NewClient(ep, dial...)
		if err != nil {
			c.Close()
			return nil, invalid("New", "endpoints", "%q: %v", ep, err)
		}
		c.conns = append(c.conns, conn)
		c.apis = append(c.apis, taskdv1.NewTaskServiceClient(conn))
		c.tokens = append(c.tokens, taskdv1.NewTokenServiceClient(conn))
	}
	if o.lazy {
		return c, nil
	}
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (o options) validate(endpoints []string) error {
	if len(endpoints) == 0 {
		return invalid("New", "endpoints", "none given; name at least one node's gRPC address (host:port)")
	}
	for i, ep := range endpoints {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return invalid("New", fmt.Sprintf("endpoints[%d]", i), "%q is not host:port: %v", ep, err)
		}
	}
	switch {
	case o.dialTimeout <= 0:
		return invalid("New", "WithDialTimeout", "%v is not positive", o.dialTimeout)
	case o.callTimeout <= 0:
		return invalid("New", "WithCallTimeout", "%v is not positive", o.callTimeout)
	case o.attempts < 1:
		return invalid("New", "WithRetries.attempts", "%d is below 1", o.attempts)
	case o.backoff <= 0 || o.maxBackoff < o.backoff:
		return invalid("New", "WithRetries", "backoff %v..%v is not a positive range", o.backoff, o.maxBackoff)
	}
	return nil
}

// waitReady connects every endpoint and waits until one is READY; the first
// one that is becomes the current endpoint.
func (c *Client) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.dialTimeout)
	defer cancel()
	ready := make(chan int, len(c.conns))
	for i, conn := range c.conns {
		conn.Connect()
		go func() {
			for {
				s := conn.GetState()
				if s == connectivity.Ready {
					ready <- i
					return
				}
				if !conn.WaitForStateChange(ctx, s) {
					ready <- -1
					return
				}
			}
		}()
	}
	first := -1
	for range c.conns {
		if i := <-ready; i >= 0 && first < 0 {
			first = i
			cancel() // the others stop waiting
		}
	}
	if first < 0 {
		msg := fmt.Sprintf("no endpoint answered within %v: %s", c.o.dialTimeout, strings.Join(c.endpoints, ", "))
		if c.tlsCreds != nil {
			if p := c.tlsCreds.lastProblem(); p != "" {
				msg += "; last TLS problem: " + p
			}
		}
		return &Error{Op: "New", Code: codes.Unavailable, Attempts: 1, Message: msg}
	}
	c.cur.Store(uint32(first))
	return nil
}

// Close closes every connection.
func (c *Client) Close() error {
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}

// API returns the generated gRPC client over the current endpoint, for
// calls this package does not wrap. Its calls are not retried.
func (c *Client) API() taskdv1.TaskServiceClient {
	return c.apis[c.cur.Load()%uint32(len(c.apis))]
}

// Endpoint returns the endpoint calls go to first now.
func (c *Client) Endpoint() string {
	return c.endpoints[c.cur.Load()%uint32(len(c.endpoints))]
}

// retry says when a failed attempt may be tried again.
type retry int

const (
	// idempotent calls change nothing, or change it to the same end however
	// often they are applied (a keyed Schedule, Cancel, Pause, Move): they
	// are retried after UNAVAILABLE and after an attempt's timeout, on the
	// next endpoint.
	idempotent retry = iota
	// once calls could take effect twice (RunNow, an unkeyed non-durable
	// Schedule): they go only to an endpoint whose connection is up and are
	// never sent a second time once an attempt may have reached a node.
	once
)

// callEndpoint runs fn against the current endpoint, failing over and
// retrying as r allows, each attempt under the call timeout and all under
// ctx: fn gets the index of the endpoint the attempt goes to.
func (c *Client) callEndpoint(ctx context.Context, op string, r retry, fn func(context.Context, uint32) error) error {
	b := backoff.New(c.o.backoff, c.o.maxBackoff)
	for attempt := 1; ; attempt++ {
		i := c.pick()
		actx, cancel := context.WithTimeout(ctx, c.o.callTimeout)
		err := fn(actx, i)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return wrap(op, status.FromContextError(ctx.Err()).Err(), attempt)
		}
		code := status.Code(err)
		if code == codes.Unavailable || code == codes.DeadlineExceeded {
			// The next attempt, and the calls after it, try another node.
			c.cur.CompareAndSwap(i, (i+1)%uint32(len(c.conns)))
		}
		if r == once || !retryable(code) || attempt >= c.o.attempts || !b.Wait(ctx) {
			return wrap(op, err, attempt)
		}
	}
}

// send is one request of a TaskService method, made by callEndpoint: the
// answer is what out makes of the last attempt's response (nil after an
// error: the conversions make nothing of it, or a zero value).
func send[Req, Resp, T any](ctx context.Context, c *Client, op string, r retry,
	method func(taskdv1.TaskServiceClient, context.Context, Req, ...grpc.CallOption) (Resp, error),
	req Req, out func(Resp) T) (T, error) {
	return sendTo(ctx, c, op, r, c.apis, method, req, out)
}

// sendTo is send for any service: apis are its stubs, one an endpoint.
func sendTo[API, Req, Resp, T any](ctx context.Context, c *Client, op string, r retry, apis []API,
	method func(API, context.Context, Req, ...grpc.CallOption) (Resp, error),
	req Req, out func(Resp) T) (T, error) {
	var v T
	err := c.callEndpoint(ctx, op, r, func(ctx context.Context, i uint32) error {
		resp, err := method(apis[i], ctx, req)
		v = out(resp)
		return err
	})
	return v, err
}

// remove is sendTo of a request that removes something, retried as
// idempotent: a retry that finds it gone (NOT_FOUND) after an attempt
// whose answer was lost succeeds, as that attempt removed it.
func remove[API, Req, Resp any](ctx context.Context, c *Client, op string, apis []API,
	method func(API, context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) error {
	attempts := 0
	return c.callEndpoint(ctx, op, idempotent, func(ctx context.Context, i uint32) error {
		attempts++
		_, err := method(apis[i], ctx, req)
		if attempts > 1 && status.Code(err) == codes.NotFound {
			return nil // the earlier attempt removed it
		}
		return err
	})
}

// taskOf is the task of a response that holds one.
func taskOf[R interface{ GetTask() *taskdv1.Task }](r R) *Task { return taskFromProto(r.GetTask()) }

// asIs answers the response itself.
func asIs[R any](r R) R { return r }

// nothing is the answer of a call that answers nothing.
func nothing[R any](R) struct{} { return struct{}{} }

// each converts every element of ps (nil for none).
func each[P, T any](ps []P, conv func(P) T) []T {
	var out []T
	for _, p := range ps {
		out = append(out, conv(p))
	}
	return out
}

// retryable codes are those after which the request may not have been
// applied and the cluster may answer on another attempt.
func retryable(code codes.Code) bool {
	return code == codes.Unavailable || code == codes.DeadlineExceeded
}

// pick returns the current endpoint if its connection is up, else the
// first one after it that is, else the current one.
func (c *Client) pick() uint32 {
	n := uint32(len(c.conns))
	cur := c.cur.Load()
	for k := uint32(0); k < n; k++ {
		i := (cur + k) % n
		if c.conns[i].GetState() == connectivity.Ready {
			if k > 0 {
				c.cur.CompareAndSwap(cur, i)
			}
			return i
		}
	}
	return cur % n
}

// Bearer returns the per-call credentials that send "authorization:
// Bearer TOKEN" with every call, for connections made without this
// package.
func Bearer(token string) credentials.PerRPCCredentials { return bearer(token) }

// callTokenKey is the context key of ContextWithToken's token.
type callTokenKey struct{}

// ContextWithToken returns a context whose calls send token as their
// bearer token instead of the client's own (WithToken); an empty token
// sends none. It is how one Client serves several callers, each with its
// token, as the console does for its viewers: the token goes only with the
// calls made with this context (and their retries), never with another
// call of the client.
func ContextWithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callTokenKey{}, token)
}

// callToken is the token credentials of every connection: the call's own
// token (ContextWithToken) if its context has one, else the client's, else
// none.
type callToken string

func (t callToken) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok := string(t)
	if own, ok := ctx.Value(callTokenKey{}).(string); ok {
		tok = own
	}
	if tok == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

// RequireTransportSecurity is false, as for bearer.
func (callToken) RequireTransportSecurity() bool { return false }

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false so that a token also works on a
// trusted network without TLS; docs/security.md says to use TLS wherever
// the network is not trusted.
func (bearer) RequireTransportSecurity() bool { return false }
