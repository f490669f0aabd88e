// Package config is the strict configuration of the taskd server binary
// (contract §9): defaults, a config file, TASKD_* environment variables and
// command-line flags, in increasing precedence. Anything unknown, removed or
// invalid stops start-up with an error that names the option and where it
// came from.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// Config is the configuration of one taskd node. Default gives the contract §9
// defaults; Load fills it from the config file, the environment and the
// command line; Validate checks it.
type Config struct {
	// Name is the stable node name (--name), unique in the cluster and used
	// in etcd keys; default the host name.
	Name string
	// DataDir holds the embedded etcd's data (--data-dir).
	DataDir string
	// Etcd lists the etcd endpoints (--etcd, comma-separated); empty starts
	// an embedded single-member etcd.
	Etcd []string
	// EtcdListen is the client URL of the embedded etcd (--etcd-listen).
	EtcdListen string
	// EtcdCA is the CA bundle that verifies the etcd servers (--etcd-ca);
	// empty: the system roots when an endpoint is https.
	EtcdCA string
	// EtcdCert and EtcdKey are the client certificate taskd presents to etcd
	// (--etcd-cert, --etcd-key); both or neither.
	EtcdCert string
	EtcdKey  string
	// EtcdUser is the etcd user taskd authenticates as (--etcd-user), with
	// the password read from EtcdPasswordFile (--etcd-password-file); both
	// or neither.
	EtcdUser         string
	EtcdPasswordFile string
	// Prefix is the etcd key prefix (--prefix); it starts and ends with '/'.
	Prefix string
	// Listen is the gRPC API address (--listen).
	Listen string
	// Advertise is the gRPC address recorded in the node's registration,
	// at which other nodes and clients reach it (--advertise); "" means the
	// address --listen is bound to.
	Advertise string
	// HTTP is the address of the web console, the metrics and the health
	// check (--http).
	HTTP string
	// MetricsListen, when set, serves /metrics and /healthz there instead
	// of on HTTP (--metrics-listen).
	MetricsListen string
	// Console serves the web console under /ui/ on HTTP (--console).
	Console bool
	// ConsoleHosts are the host names (NAME or NAME:PORT) the console and
	// pprof answer to besides the node's own addresses (--console-host).
	ConsoleHosts []string
	// TLSCert and TLSKey are the PEM certificate and key the gRPC API and
	// the HTTP endpoint serve with (--tls-cert, --tls-key); both or
	// neither. Empty: plain text. They are reloaded on SIGHUP and when the
	// files change.
	TLSCert string
	TLSKey  string
	// TLSClientCA, when set, makes the API and the HTTP endpoint require a
	// client certificate signed by one of its CAs (--tls-client-ca).
	TLSClientCA string
	// TLSCA verifies the server certificates of other nodes when this node
	// dials them (--tls-ca); empty: TLSClientCA, or the system roots.
	TLSCA string
	// TokensFile, when set, turns bearer tokens on (--tokens-file): every
	// API call then needs a token of this file or one stored in etcd.
	TokensFile string
	// Insecure lets the API serve without tokens on a non-loopback
	// address, and the console and pprof on a non-loopback HTTP address
	// (--insecure); without it such a start-up is refused.
	Insecure bool
	// Replace lets the node take over its name from a live process
	// registered under it (--replace).
	Replace bool
	// LeaseTTL is the node liveness lease TTL (--lease-ttl).
	LeaseTTL time.Duration
	// HandoffPeriod is the handoff polling period (--handoff-period).
	HandoffPeriod time.Duration
	// HandoffStart is the delay before the first handoff poll
	// (--handoff-start).
	HandoffStart time.Duration
	// VoteDelay is the status vote delay (--vote-delay).
	VoteDelay time.Duration
	// WorkerHeartbeat is how often remote workers must send a heartbeat;
	// one silent for three intervals is cut off (--worker-heartbeat).
	WorkerHeartbeat time.Duration
	// MaxWorkerStreams is how many remote workers' Work streams the node
	// serves at once (--max-worker-streams).
	MaxWorkerStreams int
	// Kinds are the kinds remote workers will serve, declared before the
	// first of them connects (--kinds): advertised and accepted at
	// schedule time, their runs waiting for a worker.
	Kinds []string
	// MaxEventStreams is how many WatchEvents streams the node serves at
	// once (--max-event-streams).
	MaxEventStreams int
	// RemoveDelay is the unmapping delay for inactive identities
	// (--remove-delay).
	RemoveDelay time.Duration
	// MisfireThreshold is the lateness after which a fire time has misfired
	// (--misfire-threshold).
	MisfireThreshold time.Duration
	// DrainTimeout is how long draining waits for in-flight runs
	// (--drain-timeout).
	DrainTimeout time.Duration
	// Rebalance lets the placement leader move identities to the least
	// loaded RUNNING nodes until the spread is even (--rebalance).
	Rebalance bool
	// RebalanceInterval is how often the leader compares the nodes'
	// identity counts (--rebalance-interval).
	RebalanceInterval time.Duration
	// RebalanceRate is the most identities moved per interval
	// (--rebalance-rate).
	RebalanceRate int
	// RebalanceTolerance is the spread of identity counts tolerated, in
	// percent of the mean count (--rebalance-tolerance); at least one
	// identity.
	RebalanceTolerance int
	// LookAhead is how long before its fire time a run may be armed
	// (--look-ahead); 0 = none.
	LookAhead time.Duration
	// ColdAfter: a task waiting longer than this for its due time keeps no
	// record in memory (--cold-after); 0 = every task keeps it.
	ColdAfter time.Duration
	// MaxPayload is the largest task payload and data in bytes
	// (--max-payload).
	MaxPayload int
	// EventBuffer bounds the events one WatchEvents stream holds for its
	// reader, in bytes (--event-buffer).
	EventBuffer int
	// History is the number of runs kept per task (--history).
	History int
	// Retention is how long a completed one-shot task stays visible
	// (--retention).
	Retention time.Duration
	// MaxCatchUp caps the runs of one FIRE_ALL misfire (--max-catch-up).
	MaxCatchUp int
	// MaxOverlap caps the unfinished overlapping runs of one allow_overlap
	// task (--max-overlap).
	MaxOverlap int
	// Workers is how many runs may be starting or in their handler at
	// once on the node (--workers); a run's commit holds none.
	Workers int
	// Limits caps, per kind, the runs of that kind in flight on the node
	// at once (--limit KIND=N).
	Limits []KindLimit
	// LogLevel is one of trace, debug, info, warn, error (--log-level).
	LogLevel string
	// LogFormat is text or json (--log-format).
	LogFormat string
	// LogSummary is the period of the INFO summary log line; 0 turns it off
	// (--log-summary).
	LogSummary time.Duration
	// Pprof serves net/http/pprof under /debug/pprof/ on the HTTP port
	// (--pprof).
	Pprof bool
	// OTLPEndpoint, when set, is the HOST:PORT of the OTLP/gRPC collector
	// that receives the node's trace spans; empty, tracing is off
	// (--otlp-endpoint).
	OTLPEndpoint string
	// OTLPInsecure sends the spans in plain text rather than over TLS
	// (--otlp-insecure).
	OTLPInsecure bool
	// Exec lists the built-in exec handlers (--exec KIND=COMMAND).
	Exec []KindTarget
	// Webhook lists the built-in webhook handlers (--webhook KIND=URL).
	Webhook []KindTarget
	// ConfigFile is the config file that was read (--config or
	// TASKD_CONFIG), or "".
	ConfigFile string
}

// KindTarget configures one built-in handler: the task kind it handles and
// its target, a shell command for --exec or a URL for --webhook.
type KindTarget struct {
	// Kind is the task kind, 1-128 bytes without whitespace or control
	// characters.
	Kind string
	// Target is the command (exec) or the http(s) URL (webhook).
	Target string
}

// KindLimit is one --limit entry: at most Limit runs of Kind in flight on
// the node at once.
type KindLimit struct {
	// Kind is the task kind, 1-128 bytes without whitespace or control
	// characters.
	Kind string
	// Limit is at least 1.
	Limit int
}

// LimitsByKind returns the --limit entries as a map from kind to limit.
func (c Config) LimitsByKind() map[string]int {
	if len(c.Limits) == 0 {
		return nil
	}
	m := make(map[string]int, len(c.Limits))
	for _, l := range c.Limits {
		m[l.Kind] = l.Limit
	}
	return m
}

// Default returns the contract §9 defaults. Name is the host name, or "" if it
// cannot be read (which Validate then reports).
func Default() Config {
	name, err := os.Hostname()
	if err != nil {
		name = ""
	}
	return Config{
		Name:             name,
		DataDir:          "./taskd-data",
		EtcdListen:       "http://127.0.0.1:2379",
		Prefix:           "/taskd/",
		Listen:           "127.0.0.1:7420",
		HTTP:             "127.0.0.1:7421",
		Console:          true,
		LeaseTTL:         10 * time.Second,
		HandoffPeriod:    500 * time.Millisecond,
		HandoffStart:     2500 * time.Millisecond,
		VoteDelay:        5000 * time.Millisecond,
		WorkerHeartbeat:  5 * time.Second,
		MaxWorkerStreams: 1024,
		MaxEventStreams:  256,
		RemoveDelay:      5000 * time.Millisecond,
		MisfireThreshold: 60 * time.Second,
		DrainTimeout:     30 * time.Second,
		LookAhead:        time.Second,
		ColdAfter:        2 * time.Minute,
		MaxPayload:       256 << 10,
		EventBuffer:      1 << 20,
		History:          20,
		Retention:        24 * time.Hour,
		MaxCatchUp:       100,
		MaxOverlap:       4,
		Workers:          128,
		LogLevel:         "info",
		LogFormat:        "text",
		LogSummary:       time.Minute,

		Rebalance:          true,
		RebalanceInterval:  10 * time.Second,
		RebalanceRate:      50,
		RebalanceTolerance: 10,
	}
}

// sourceKind says where a setting came from.
type sourceKind int

const (
	fromFile sourceKind = iota
	fromEnv
	fromFlag
)

// source is where one setting came from, for error messages.
type source struct {
	kind sourceKind
	key  string // the flag as written, or the environment variable
	file string
	line int
}

// String describes the source, e.g. "environment variable TASKD_FOO".
func (s source) String() string {
	switch s.kind {
	case fromFlag:
		return "command-line flag " + printable(s.key)
	case fromEnv:
		return "environment variable " + printable(s.key)
	default:
		return fmt.Sprintf("config file %s, line %d", printable(s.file), s.line)
	}
}

// printable returns s, quoted if it holds a character that is not
// printable, so that an error stays one line per problem.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// spell writes the option called name as this source would.
func (s source) spell(name string) string {
	switch s.kind {
	case fromFlag:
		return "--" + name
	case fromEnv:
		return envName(name)
	default:
		return name
	}
}

// setting is one value for one option from one source.
type setting struct {
	opt   *option
	value string
	src   source
	// clear marks a repeatable option set to no entries.
	clear bool
}

// Load builds the configuration from, in increasing precedence: the
// defaults, the config file (if --config or TASKD_CONFIG names one), the
// TASKD_* environment variables in environ, then the command-line flags in
// args (without the program name). For a repeatable option (exec, webhook)
// the highest-precedence source that sets it supplies all its entries. The
// result is validated. On -h or --help, Load writes the usage to out and
// returns an error for which errors.Is(err, flag.ErrHelp) holds.
func Load(args []string, environ []string, out io.Writer) (Config, error) {
	flags, err := parseArgs(args, out)
	if err != nil {
		return Config{}, err
	}
	env, err := parseEnv(environ)
	if err != nil {
		return Config{}, err
	}

	path := ""
	for _, group := range [][]setting{env, flags} {
		for _, s := range group {
			if s.opt.name == configOptName {
				path = s.value
			}
		}
	}
	var file []setting
	if path != "" {
		if file, err = parseFile(path); err != nil {
			return Config{}, err
		}
	}

	c := Default()
	provenance := make(map[string]source)
	var errs []error
	for _, group := range [][]setting{file, env, flags} {
		replaced := make(map[*option]bool)
		for _, s := range group {
			if s.opt.repeatable && !replaced[s.opt] {
				s.opt.reset(&c)
				replaced[s.opt] = true
			}
			provenance[s.opt.name] = s.src
			if s.clear {
				continue
			}
			if err := s.opt.set(&c, s.value); err != nil {
				errs = append(errs, invalidValue(s, err))
			}
		}
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}

	var problems []error
	for _, p := range c.problems() {
		if src, ok := provenance[p.option]; ok {
			problems = append(problems, fmt.Errorf("%w (set by %s)", p, src))
		} else {
			problems = append(problems, p)
		}
	}
	if err := errors.Join(problems...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// invalidValue reports a value that its option could not parse.
func invalidValue(s setting, err error) error {
	if s.src.kind == fromFlag {
		return fmt.Errorf("invalid value %q for --%s: %w", s.value, s.opt.name, err)
	}
	return fmt.Errorf("invalid value %q for --%s (%s): %w", s.value, s.opt.name, s.src, err)
}

// unknownOption reports an option that does not exist: removed ones with
// the reason, others with the closest known option if there is one.
func unknownOption(name string, src source) error {
	if reason, ok := removedOptions[name]; ok {
		return fmt.Errorf("option %q (%s): %s", name, src, reason)
	}
	msg := fmt.Sprintf("unknown option %q (%s)", name, src)
	if s := suggest(name); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", src.spell(s))
	}
	return errors.New(msg)
}

// optionError is a Validate problem with one option.
type optionError struct {
	option string
	err    error
}

// Error names the option, e.g. "--lease-ttl: 1s is below 2s ...".
func (e *optionError) Error() string { return "--" + e.option + ": " + e.err.Error() }

// Unwrap returns the underlying problem.
func (e *optionError) Unwrap() error { return e.err }

// problems lists what is wrong with c, one error per option, in the order
// of the help.
func (c Config) problems() []*optionError {
	var errs []*optionError
	for _, o := range options {
		if o.check == nil {
			continue
		}
		if err := o.check(c); err != nil {
			errs = append(errs, &optionError{option: o.name, err: err})
		}
	}
	return errs
}

// Validate checks every option of c against its limits (contract §9, §10) and
// returns nil or an error listing each problem, one per line, each naming
// its option.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// Usage writes the option table to w: every option with its default and
// meaning, how to set it from the environment or a config file, and the
// options that were removed.
func Usage(w io.Writer) {
	fmt.Fprint(w, `Usage: taskd [options]

Every option is also an environment variable TASKD_<OPTION> (upper case, "-"
becomes "_", e.g. TASKD_LEASE_TTL) and a line "option = value" in the file
named by --config or TASKD_CONFIG. A flag beats the environment, which beats
the file, which beats the default. An unknown, removed or invalid option
stops start-up.

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OPTION\tDEFAULT\tMEANING")
	for _, o := range options {
		fmt.Fprintf(tw, "  --%s %s\t%s\t%s\n", o.name, o.arg, o.def, o.help)
	}
	fmt.Fprintf(tw, "  -h, --help\t\tshow this help\n")
	fmt.Fprintf(tw, "  --version\t\tprint the build information (module version, VCS revision, Go version) and exit\n")
	_ = tw.Flush()

	fmt.Fprint(w, "\nRemoved options:\n")
	names := make([]string, 0, len(removedOptions))
	for n := range removedOptions {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  --%s: %s\n", n, removedOptions[n])
	}
}
