package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// option describes one configuration option. Its name is the flag name
// without dashes, the config-file key, and (upper case, '-' → '_', after
// TASKD_) the environment variable.
type option struct {
	name string
	// arg is the value placeholder shown in the help, e.g. DURATION.
	arg string
	// def is the default as shown in the help.
	def string
	// help is the meaning shown in the help.
	help string
	// repeatable options collect one entry per occurrence.
	repeatable bool
	// boolean options may be given as a bare flag (--replace), meaning true.
	boolean bool
	// set stores a textual value into c; for a repeatable option it appends
	// one entry.
	set func(c *Config, v string) error
	// reset clears a repeatable option before a source replaces its entries.
	reset func(c *Config)
	// check reports what is wrong with the option's value in c, or nil.
	check func(c Config) error
}

// Limits enforced by Validate.
const (
	maxNameLen     = 64
	maxKindLen     = 128
	minLeaseTTL    = 2 * time.Second
	maxLeaseTTL    = time.Hour
	maxPayloadCap  = 1 << 20
	minEventBuffer = 64 << 10
	maxEventBuffer = 64 << 20
	maxHistory     = 1000
	maxWorkers     = 10000
	// maxWorkerStreams: each stream holds a reader, a sender and a queue.
	maxWorkerStreams = 65536
	// maxEventStreams: each stream may hold --event-buffer for its reader.
	maxEventStreams = 65536
	envPrefix       = "TASKD_"
	configOptName   = "config"
	logLevelChoice  = "trace, debug, info, warn, error"
)

// options is the table of every option, in the order of the help.
var options = []*option{
	{
		name: "name", arg: "NAME", def: "host name",
		help:  "stable node name, unique in the cluster; 1-64 bytes of A-Z a-z 0-9 . _ - (it is used in etcd keys)",
		set:   func(c *Config, v string) error { c.Name = v; return nil },
		check: func(c Config) error { return checkName(c.Name) },
	},
	{
		name: "data-dir", arg: "DIR", def: "./taskd-data",
		help: "embedded etcd's data",
		set:  func(c *Config, v string) error { c.DataDir = v; return nil },
		check: func(c Config) error {
			if c.DataDir == "" && len(c.Etcd) == 0 {
				return errors.New("must not be empty when the embedded etcd is used (--etcd empty)")
			}
			return nil
		},
	},
	{
		name: "etcd", arg: "ENDPOINTS", def: "(empty)",
		help:  "comma-separated etcd endpoints (host:port or URLs); empty = start an embedded single-member etcd",
		set:   setEtcd,
		check: func(c Config) error { return checkEndpoints(c.Etcd) },
	},
	{
		name: "etcd-listen", arg: "URL", def: "http://127.0.0.1:2379",
		help: "client URL of the embedded etcd, so that other nodes on the machine can join it with --etcd; " +
			"an https URL serves --tls-cert (and requires client certificates with --tls-client-ca)",
		set: func(c *Config, v string) error { c.EtcdListen = v; return nil },
		check: func(c Config) error {
			if err := checkListenURL(c.EtcdListen); err != nil {
				return err
			}
			if len(c.Etcd) == 0 && strings.HasPrefix(c.EtcdListen, "https://") && c.TLSCert == "" {
				return errors.New("an https URL needs --tls-cert and --tls-key, which the embedded etcd serves")
			}
			return nil
		},
	},
	{
		name: "etcd-ca", arg: "FILE", def: "(none)",
		help: "PEM CA bundle that verifies the etcd servers' certificates (https endpoints); none = the system roots",
		set:  func(c *Config, v string) error { c.EtcdCA = v; return nil },
	},
	{
		name: "etcd-cert", arg: "FILE", def: "(none)",
		help:  "PEM client certificate presented to etcd, with --etcd-key",
		set:   func(c *Config, v string) error { c.EtcdCert = v; return nil },
		check: func(c Config) error { return checkPair(c.EtcdCert, c.EtcdKey, "--etcd-cert", "--etcd-key") },
	},
	{
		name: "etcd-key", arg: "FILE", def: "(none)",
		help: "PEM private key of --etcd-cert",
		set:  func(c *Config, v string) error { c.EtcdKey = v; return nil },
	},
	{
		name: "etcd-user", arg: "USER", def: "(none)",
		help: "etcd user to authenticate as (etcd auth), with --etcd-password-file",
		set:  func(c *Config, v string) error { c.EtcdUser = v; return nil },
		check: func(c Config) error {
			return checkPair(c.EtcdUser, c.EtcdPasswordFile, "--etcd-user", "--etcd-password-file")
		},
	},
	{
		name: "etcd-password-file", arg: "FILE", def: "(none)",
		help: "file holding the password of --etcd-user (one trailing newline is ignored)",
		set:  func(c *Config, v string) error { c.EtcdPasswordFile = v; return nil },
	},
	{
		name: "prefix", arg: "PREFIX", def: "/taskd/",
		help:  "etcd key prefix, so that several clusters can share one etcd; starts and ends with /",
		set:   func(c *Config, v string) error { c.Prefix = v; return nil },
		check: func(c Config) error { return checkPrefix(c.Prefix) },
	},
	{
		name: "listen", arg: "HOST:PORT", def: "127.0.0.1:7420",
		help:  "gRPC API address",
		set:   func(c *Config, v string) error { c.Listen = v; return nil },
		check: func(c Config) error { return checkHostPort(c.Listen) },
	},
	{
		name: "advertise", arg: "HOST:PORT", def: "(the --listen address)",
		help: "gRPC address at which other nodes and clients reach this node, recorded in its registration; " +
			"set it when --listen's host is unspecified (0.0.0.0) or not reachable from elsewhere, e.g. in a container",
		set:   func(c *Config, v string) error { c.Advertise = v; return nil },
		check: func(c Config) error { return checkAdvertise(c.Advertise) },
	},
	{
		name: "http", arg: "HOST:PORT", def: "127.0.0.1:7421",
		help: "HTTP address of the web console (/ui/), /metrics, /healthz and, with --pprof, /debug/pprof/; " +
			"a non-loopback address serving the console or pprof needs --tokens-file or --insecure (see --console, --metrics-listen)",
		set:   func(c *Config, v string) error { c.HTTP = v; return nil },
		check: func(c Config) error { return checkHostPort(c.HTTP) },
	},
	{
		name: "metrics-listen", arg: "HOST:PORT", def: "(on --http)",
		help: "serve /metrics and /healthz on this address instead of --http, apart from the console " +
			"(no tokens needed: neither shows task data); `taskd health` then asks it (TASKD_METRICS_LISTEN)",
		set:   func(c *Config, v string) error { c.MetricsListen = v; return nil },
		check: func(c Config) error { return checkMetricsListen(c) },
	},
	{
		name: "console", arg: "", def: "true", boolean: true,
		help: "serve the web console under /ui/ on --http; --console=false turns it off (/ui/ is then 404); --console alone means true",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			c.Console = b
			return nil
		},
	},
	{
		name: "console-host", arg: "HOSTS", def: "(none)",
		help: "comma-separated host names (NAME or NAME:PORT, at most 32 of at most 253 bytes) the console and pprof answer to " +
			"besides this node's addresses, e.g. the name of a reverse proxy; a request with any other Host is refused (DNS rebinding)",
		set:   setConsoleHosts,
		check: func(c Config) error { return checkConsoleHosts(c.ConsoleHosts) },
	},
	{
		name: "tls-cert", arg: "FILE", def: "(none)",
		help: "PEM certificate the gRPC API and the HTTP endpoint serve with, with --tls-key; none = plain text; " +
			"reloaded on SIGHUP and when the file changes; with an https --etcd-listen the embedded etcd serves it too",
		set:   func(c *Config, v string) error { c.TLSCert = v; return nil },
		check: func(c Config) error { return checkPair(c.TLSCert, c.TLSKey, "--tls-cert", "--tls-key") },
	},
	{
		name: "tls-key", arg: "FILE", def: "(none)",
		help: "PEM private key of --tls-cert",
		set:  func(c *Config, v string) error { c.TLSKey = v; return nil },
	},
	{
		name: "tls-client-ca", arg: "FILE", def: "(none)",
		help:  "PEM CA bundle: when set, clients of the API, the HTTP endpoint (and the embedded etcd) must present a certificate it signed",
		set:   func(c *Config, v string) error { c.TLSClientCA = v; return nil },
		check: func(c Config) error { return needsTLS(c, c.TLSClientCA) },
	},
	{
		name: "tls-ca", arg: "FILE", def: "(--tls-client-ca)",
		help:  "PEM CA bundle that verifies other nodes' certificates when this node dials them; default --tls-client-ca, else the system roots",
		set:   func(c *Config, v string) error { c.TLSCA = v; return nil },
		check: func(c Config) error { return needsTLS(c, c.TLSCA) },
	},
	{
		name: "tokens-file", arg: "FILE", def: "(none)",
		help: "turn bearer tokens on: every API call then needs a token of this file (one per line: " +
			"ID SHA256-OF-SECRET VERBS [IDENTITIES]; read at start and again on SIGHUP) or one stored in etcd (taskctl token create)",
		set: func(c *Config, v string) error { c.TokensFile = v; return nil },
	},
	{
		name: "insecure", arg: "", def: "false", boolean: true,
		help: "serve the API without tokens on a non-loopback --listen address, and the console and pprof on a non-loopback --http " +
			"address (refused otherwise); --insecure alone means true",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			c.Insecure = b
			return nil
		},
	},
	{
		name: "replace", arg: "", def: "false", boolean: true,
		help: "take over the name even from a live process registered under it (which then stops); " +
			"without it, start-up refuses while that process answers at its address; --replace alone means true",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			c.Replace = b
			return nil
		},
	},
	{
		name: "lease-ttl", arg: "DURATION", def: "10s",
		help:  "node liveness lease; whole seconds from 2s (etcd's minimum lease TTL) to 1h",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.LeaseTTL }),
		check: func(c Config) error { return checkLeaseTTL(c.LeaseTTL) },
	},
	{
		name: "handoff-period", arg: "DURATION", def: "500ms",
		help:  "handoff polling period (the safety net under the handoff watch), > 0",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.HandoffPeriod }),
		check: func(c Config) error { return checkPositive(c.HandoffPeriod) },
	},
	{
		name: "handoff-start", arg: "DURATION", def: "2500ms",
		help:  "delay before the first handoff poll; 0 = poll at once",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.HandoffStart }),
		check: func(c Config) error { return checkNonNegative(c.HandoffStart) },
	},
	{
		name: "vote-delay", arg: "DURATION", def: "5000ms",
		help:  "an identity's active/inactive status is reported only after this delay, and not if it flipped back",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.VoteDelay }),
		check: func(c Config) error { return checkNonNegative(c.VoteDelay) },
	},
	{
		name: "worker-heartbeat", arg: "DURATION", def: "5s",
		help:  "how often remote workers must send a heartbeat; a worker silent for three intervals, or that leaves a message unread that long, is cut off and its runs retried, > 0",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.WorkerHeartbeat }),
		check: func(c Config) error { return checkPositive(c.WorkerHeartbeat) },
	},
	{
		name: "max-worker-streams", arg: "N", def: "1024",
		help:  "remote workers' Work streams served at once, 1 to 65536; one more is refused with RESOURCE_EXHAUSTED",
		set:   intSetter(func(c *Config) *int { return &c.MaxWorkerStreams }),
		check: func(c Config) error { return checkRange(c.MaxWorkerStreams, 1, maxWorkerStreams) },
	},
	{
		name: "max-event-streams", arg: "N", def: "256",
		help:  "WatchEvents streams (taskctl events, the console's live events) served at once, 1 to 65536; one more is refused with RESOURCE_EXHAUSTED",
		set:   intSetter(func(c *Config) *int { return &c.MaxEventStreams }),
		check: func(c Config) error { return checkRange(c.MaxEventStreams, 1, maxEventStreams) },
	},
	{
		name: "remove-delay", arg: "DURATION", def: "5000ms",
		help:  "an identity inactive with no tasks for this long after its inactive vote is unmapped",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.RemoveDelay }),
		check: func(c Config) error { return checkNonNegative(c.RemoveDelay) },
	},
	{
		name: "misfire-threshold", arg: "DURATION", def: "60s",
		help:  "lateness after which a fire time has misfired, > 0",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.MisfireThreshold }),
		check: func(c Config) error { return checkPositive(c.MisfireThreshold) },
	},
	{
		name: "drain-timeout", arg: "DURATION", def: "30s",
		help:  "when draining (SIGTERM, DrainNode), how long identities with runs in flight wait before they are handed over anyway",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.DrainTimeout }),
		check: func(c Config) error { return checkNonNegative(c.DrainTimeout) },
	},
	{
		name: "look-ahead", arg: "DURATION", def: "1s",
		help:  "a run due within this is armed ahead (its start written before its fire time, its handler called at the fire time); 0 = no look-ahead",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.LookAhead }),
		check: func(c Config) error { return checkNonNegative(c.LookAhead) },
	},
	{
		name: "cold-after", arg: "DURATION", def: "2m",
		help:  "a task waiting longer than this for its due time keeps no record in memory (read again from etcd before it is due); 0 = every task keeps it",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.ColdAfter }),
		check: func(c Config) error { return checkNonNegative(c.ColdAfter) },
	},
	{
		name: "max-payload", arg: "SIZE", def: "256KiB",
		help: "largest task payload and data, 1 byte to 1MiB; plain bytes or a KiB/MiB suffix",
		set: func(c *Config, v string) error {
			n, err := parseSize(v)
			if err != nil {
				return err
			}
			c.MaxPayload = n
			return nil
		},
		check: func(c Config) error {
			if c.MaxPayload < 1 || c.MaxPayload > maxPayloadCap {
				return fmt.Errorf("%d bytes is outside 1 byte to 1MiB (%d bytes; etcd refuses requests over 1.5MiB)", c.MaxPayload, maxPayloadCap)
			}
			return nil
		},
	},
	{
		name: "event-buffer", arg: "SIZE", def: "1MiB",
		help: "events one WatchEvents stream holds for a reader that has not taken them, 64KiB to 64MiB (twice that while it catches up from an old cursor); a reader further behind is ended with RESOURCE_EXHAUSTED and the cursor to resume from",
		set: func(c *Config, v string) error {
			n, err := parseSize(v)
			if err != nil {
				return err
			}
			c.EventBuffer = n
			return nil
		},
		check: func(c Config) error {
			if c.EventBuffer < minEventBuffer || c.EventBuffer > maxEventBuffer {
				return fmt.Errorf("%d bytes is outside 64KiB to 64MiB", c.EventBuffer)
			}
			return nil
		},
	},
	{
		name: "history", arg: "N", def: "20",
		help:  "runs kept per task, 1 to 1000",
		set:   intSetter(func(c *Config) *int { return &c.History }),
		check: func(c Config) error { return checkRange(c.History, 1, maxHistory) },
	},
	{
		name: "retention", arg: "DURATION", def: "24h",
		help:  "how long a completed one-shot task stays visible",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.Retention }),
		check: func(c Config) error { return checkNonNegative(c.Retention) },
	},
	{
		name: "max-catch-up", arg: "N", def: "100",
		help:  "most runs a FIRE_ALL misfire catches up, >= 1",
		set:   intSetter(func(c *Config) *int { return &c.MaxCatchUp }),
		check: func(c Config) error { return checkRange(c.MaxCatchUp, 1, math.MaxInt) },
	},
	{
		name: "max-overlap", arg: "N", def: "4",
		help:  "overlapping runs of one allow_overlap task unfinished at once",
		set:   intSetter(func(c *Config) *int { return &c.MaxOverlap }),
		check: func(c Config) error { return checkRange(c.MaxOverlap, 1, 1000) },
	},
	{
		name: "workers", arg: "N", def: "128",
		help:  "runs starting or in their handler at once, per node (a run's commit holds no worker), 1 to 10000; one identity holds at most three quarters of them (at least 1)",
		set:   intSetter(func(c *Config) *int { return &c.Workers }),
		check: func(c Config) error { return checkRange(c.Workers, 1, maxWorkers) },
	},
	{
		name: "limit", arg: "KIND=N", def: "(none)", repeatable: true,
		help: "at most N (1 to 10000) runs of KIND in flight on this node at once; a run waiting for its kind holds no worker " +
			"and does not hold back other kinds; repeatable, one entry per kind (TASKD_LIMIT, TASKD_LIMIT_1, ...; in the file repeat the line)",
		set:   setLimit,
		reset: func(c *Config) { c.Limits = nil },
		check: func(c Config) error { return checkLimits(c.Limits) },
	},
	{
		name: "log-level", arg: "LEVEL", def: "info",
		help: "log level: " + logLevelChoice,
		set:  func(c *Config, v string) error { c.LogLevel = strings.ToLower(v); return nil },
		check: func(c Config) error {
			switch c.LogLevel {
			case "trace", "debug", "info", "warn", "error":
				return nil
			}
			return fmt.Errorf("%q is not one of %s", c.LogLevel, logLevelChoice)
		},
	},
	{
		name: "log-format", arg: "FORMAT", def: "text",
		help: "log line format: text, or json (one JSON object a line)",
		set:  func(c *Config, v string) error { c.LogFormat = strings.ToLower(v); return nil },
		check: func(c Config) error {
			if c.LogFormat != "text" && c.LogFormat != "json" {
				return fmt.Errorf("%q is not text or json", c.LogFormat)
			}
			return nil
		},
	},
	{
		name: "log-summary", arg: "DURATION", def: "1m",
		help:  "period of the INFO summary line (runs, failures, fire lag p99 over the period); 0 turns it off",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.LogSummary }),
		check: func(c Config) error { return checkNonNegative(c.LogSummary) },
	},
	{
		name: "pprof", arg: "", def: "false", boolean: true,
		help: "serve Go's profiling endpoints under /debug/pprof/ on --http (with --tokens-file they need an unscoped admin token); " +
			"--pprof alone means true",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			c.Pprof = b
			return nil
		},
	},
	{
		name: "otlp-endpoint", arg: "HOST:PORT", def: "(none)",
		help: "send OpenTelemetry traces (a span per task API request and per run, linked to the schedule request) over OTLP/gRPC to HOST:PORT; unset, nothing is traced",
		set:  func(c *Config, v string) error { c.OTLPEndpoint = v; return nil },
		check: func(c Config) error {
			if c.OTLPEndpoint == "" {
				return nil
			}
			if host, port, err := net.SplitHostPort(c.OTLPEndpoint); err != nil || host == "" || port == "" {
				return fmt.Errorf("%q is not HOST:PORT", c.OTLPEndpoint)
			}
			return nil
		},
	},
	{
		name: "otlp-insecure", arg: "", def: "false", boolean: true,
		help: "send traces to --otlp-endpoint in plain text instead of TLS; --otlp-insecure alone means true",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			c.OTLPInsecure = b
			return nil
		},
	},
	{
		name: "exec", arg: "KIND=COMMAND", def: "(none)", repeatable: true,
		help:  "run tasks of KIND with /bin/sh -c COMMAND, payload on stdin; repeatable (one entry per variable: TASKD_EXEC, TASKD_EXEC_1, TASKD_EXEC_2, ...; in the file repeat the line)",
		set:   kindTargetSetter(func(c *Config) *[]KindTarget { return &c.Exec }, "KIND=COMMAND"),
		reset: func(c *Config) { c.Exec = nil },
		check: func(c Config) error { return checkKindTargets(c.Exec, nil, false) },
	},
	{
		name: "webhook", arg: "KIND=URL", def: "(none)", repeatable: true,
		help:  "POST the payload of tasks of KIND to the http(s) URL; repeatable (one entry per variable: TASKD_WEBHOOK, TASKD_WEBHOOK_1, ...; in the file repeat the line)",
		set:   kindTargetSetter(func(c *Config) *[]KindTarget { return &c.Webhook }, "KIND=URL"),
		reset: func(c *Config) { c.Webhook = nil },
		check: func(c Config) error { return checkKindTargets(c.Webhook, c.Exec, true) },
	},
	{
		name: configOptName, arg: "PATH", def: "(none)",
		help: "config file of \"option = value\" lines; also TASKD_CONFIG",
		set:  func(c *Config, v string) error { c.ConfigFile = v; return nil },
	},
}

// optionsByName indexes options by name.
var optionsByName = func() map[string]*option {
	m := make(map[string]*option, len(options))
	for _, o := range options {
		m[o.name] = o
	}
	return m
}()

// removedOptions maps an option that no longer exists to the reason.
var removedOptions = map[string]string{
	"run-on-every-node": "removed: scope is stated per task (docs/contract.md §6)",
	"cluster-lock":      "removed: taskd fences every commit with etcd revisions instead of a cluster-wide lock",
}

// ignoredEnv lists the TASKD_ variables that are not options: those the
// exec handler sets for its children (a taskd started from such a child must
// not trip over them), and the fault-injection switch of chaos builds.
var ignoredEnv = map[string]bool{
	"TASKD_IDENTITY": true,
	"TASKD_TASK_ID":  true,
	"TASKD_KIND":     true,
	"TASKD_RUN":      true,
	"TASKD_FENCE":    true,
	"TASKD_NODE":     true,
	"TASKD_ATTEMPT":  true,
	// Read by a taskd built for fault-injection tests, not an option.
	"TASKD_CHAOS_FAULTS": true,
}

// envName is the environment variable of the option called name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// suggest returns the known option closest to name if it is within edit
// distance 2, else "". Ties go to the earlier option in the table.
func suggest(name string) string {
	best, bestDist := "", 3
	for _, o := range options {
		if d := editDistance(name, o.name); d < bestDist {
			best, bestDist = o.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// durationSetter stores a time.ParseDuration value into the field.
func durationSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*field(c) = d
		return nil
	}
}

// intSetter stores a decimal integer into the field.
func intSetter(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) {
				return fmt.Errorf("not a whole number: %w", ne.Err)
			}
			return err
		}
		*field(c) = n
		return nil
	}
}

// kindTargetSetter appends one KIND=TARGET entry to the field.
func kindTargetSetter(field func(*Config) *[]KindTarget, want string) func(*Config, string) error {
	return func(c *Config, v string) error {
		kind, target, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want %s", want)
		}
		*field(c) = append(*field(c), KindTarget{Kind: kind, Target: target})
		return nil
	}
}

// setLimit appends one --limit KIND=N entry; N must be a whole number.
func setLimit(c *Config, v string) error {
	kind, num, ok := strings.Cut(v, "=")
	if !ok {
		return errors.New("want KIND=N")
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return fmt.Errorf("want KIND=N with N a whole number, got %q", num)
	}
	c.Limits = append(c.Limits, KindLimit{Kind: kind, Limit: n})
	return nil
}

// checkLimits checks the --limit entries: valid kinds, each named once,
// limits from 1 to maxWorkers.
func checkLimits(list []KindLimit) error {
	seen := make(map[string]bool, len(list))
	for _, l := range list {
		entry := fmt.Sprintf("%s=%d", l.Kind, l.Limit)
		if err := checkKind(l.Kind); err != nil {
			return fmt.Errorf("entry %q: %w", entry, err)
		}
		if err := checkRange(l.Limit, 1, maxWorkers); err != nil {
			return fmt.Errorf("entry %q: limit %w", entry, err)
		}
		if seen[l.Kind] {
			return fmt.Errorf("kind %q is limited more than once; give one limit per kind", l.Kind)
		}
		seen[l.Kind] = true
	}
	return nil
}

// setEtcd stores a comma-separated endpoint list; an empty value means the
// embedded etcd. Empty entries are kept so that Validate reports them.
func setEtcd(c *Config, v string) error {
	if strings.TrimSpace(v) == "" {
		c.Etcd = nil
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	c.Etcd = parts
	return nil
}

// parseSize parses a byte count: digits, optionally followed by KiB or MiB.
func parseSize(v string) (int, error) {
	num, mult := v, int64(1)
	switch {
	case strings.HasSuffix(v, "KiB"):
		num, mult = strings.TrimSuffix(v, "KiB"), 1<<10
	case strings.HasSuffix(v, "MiB"):
		num, mult = strings.TrimSuffix(v, "MiB"), 1<<20
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, errors.New("want a whole number of bytes, optionally with a KiB or MiB suffix")
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n*mult > math.MaxInt32 {
		return 0, errors.New("size out of range")
	}
	return int(n * mult), nil
}

// checkName checks a node name.
func checkName(name string) error {
	if name == "" {
		return errors.New("must not be empty (the default is the host name)")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%q is %d bytes, more than %d (it is used in etcd keys)", name, len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return fmt.Errorf("%q contains %q; allowed are A-Z a-z 0-9 . _ - (it is used in etcd keys)", name, rune(b))
		}
	}
	return nil
}

// checkPair requires both of two options or neither.
func checkPair(a, b, aName, bName string) error {
	switch {
	case a != "" && b == "":
		return fmt.Errorf("needs %s as well", bName)
	case a == "" && b != "":
		return fmt.Errorf("%s is set without %s; give both or neither", bName, aName)
	}
	return nil
}

// needsTLS reports a TLS CA option set while the server has no
// certificate.
func needsTLS(c Config, v string) error {
	if v != "" && c.TLSCert == "" {
		return errors.New("needs --tls-cert and --tls-key: without them the API is plain text")
	}
	return nil
}

// checkPrefix checks an etcd key prefix.
func checkPrefix(p string) error {
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q must start and end with \"/\"", p)
	}
	if strings.ContainsFunc(p, unicode.IsControl) {
		return fmt.Errorf("%q contains a control character", p)
	}
	return nil
}

// checkPort checks a numeric port 0-65535.
func checkPort(port string) error {
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// checkHostPort checks a host:port listen address.
func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", v, err)
	}
	if err := checkPort(port); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	return nil
}

// checkAdvertise checks an advertised address: empty (use the listener's),
// or a host:port another machine can dial: a host that is not unspecified and
// a port that is not 0.
func checkAdvertise(v string) error {
	if v == "" {
		return nil
	}
	if err := checkHostPort(v); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(v)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%q: the host must be one others can dial, not unspecified", v)
	}
	if port == "0" {
		return fmt.Errorf("%q: the port must not be 0", v)
	}
	return nil
}

// checkListenURL checks the embedded etcd's client URL: http or https,
// host and port, nothing else.
func checkListenURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", v, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http:// or https:// URL", v)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", v)
	}
	if u.Port() == "" {
		return fmt.Errorf("%q has no port", v)
	}
	if err := checkPort(u.Port()); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must be scheme://host:port with no user, path, query or fragment", v)
	}
	return nil
}

// checkEndpoints checks the --etcd endpoints: host:port, or an http, https,
// unix or unixs URL.
func checkEndpoints(eps []string) error {
	for i, e := range eps {
		if e == "" {
			return fmt.Errorf("endpoint %d of %d is empty (a stray comma?)", i+1, len(eps))
		}
		if !strings.Contains(e, "://") {
			if err := checkHostPort(e); err != nil {
				return fmt.Errorf("endpoint %w", err)
			}
			continue
		}
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("endpoint %q is not a URL: %w", e, err)
		}
		switch u.Scheme {
		case "http", "https":
			if u.Hostname() == "" {
				return fmt.Errorf("endpoint %q has no host", e)
			}
			if p := u.Port(); p != "" {
				if err := checkPort(p); err != nil {
					return fmt.Errorf("endpoint %q: %w", e, err)
				}
			}
		case "unix", "unixs":
			if u.Host == "" && u.Path == "" {
				return fmt.Errorf("endpoint %q has no socket path", e)
			}
		default:
			return fmt.Errorf("endpoint %q: scheme must be http, https, unix or unixs", e)
		}
	}
	return nil
}

// checkLeaseTTL checks the node lease TTL.
func checkLeaseTTL(d time.Duration) error {
	switch {
	case d < minLeaseTTL:
		return fmt.Errorf("%v is below %v, etcd's minimum lease TTL with default timings (a shorter TTL would silently become %v)", d, minLeaseTTL, minLeaseTTL)
	case d > maxLeaseTTL:
		return fmt.Errorf("%v is above the maximum of %v", d, maxLeaseTTL)
	case d%time.Second != 0:
		return fmt.Errorf("%v is not a whole number of seconds (etcd lease TTLs are whole seconds)", d)
	}
	return nil
}

// checkPositive requires d > 0.
func checkPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%v must be greater than 0", d)
	}
	return nil
}

// checkNonNegative requires d >= 0.
func checkNonNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%v must not be negative", d)
	}
	return nil
}

// checkRange requires lo <= n <= hi.
func checkRange(n, lo, hi int) error {
	if n < lo {
		return fmt.Errorf("%d is below the minimum of %d", n, lo)
	}
	if n > hi {
		return fmt.Errorf("%d is above the maximum of %d", n, hi)
	}
	return nil
}

// checkKind checks a handler kind: 1-128 bytes of UTF-8 without whitespace
// or control characters.
func checkKind(kind string) error {
	switch {
	case kind == "":
		return errors.New("empty kind")
	case len(kind) > maxKindLen:
		return fmt.Errorf("kind %q is %d bytes, more than %d", kind, len(kind), maxKindLen)
	case !utf8.ValidString(kind):
		return fmt.Errorf("kind %q is not valid UTF-8", kind)
	case strings.ContainsFunc(kind, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("kind %q contains whitespace or a control character", kind)
	}
	return nil
}

// checkKindTargets checks exec (webhooks false) or webhook (webhooks true)
// entries; other holds the exec entries when checking webhooks, so that a
// kind configured for both is reported.
func checkKindTargets(list, other []KindTarget, webhooks bool) error {
	seen := make(map[string]bool, len(list))
	for _, kt := range list {
		entry := kt.Kind + "=" + kt.Target
		if err := checkKind(kt.Kind); err != nil {
			return fmt.Errorf("entry %q: %w", entry, err)
		}
		if strings.TrimSpace(kt.Target) == "" {
			return fmt.Errorf("entry %q: empty target for kind %q", entry, kt.Kind)
		}
		if webhooks {
			u, err := url.Parse(kt.Target)
			if err != nil {
				return fmt.Errorf("entry %q: kind %q: bad URL: %w", entry, kt.Kind, err)
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("entry %q: kind %q: %q is not an absolute http:// or https:// URL", entry, kt.Kind, kt.Target)
			}
		}
		if seen[kt.Kind] {
			return fmt.Errorf("kind %q is configured more than once; a kind has one handler", kt.Kind)
		}
		seen[kt.Kind] = true
	}
	for _, kt := range other {
		if seen[kt.Kind] {
			return fmt.Errorf("kind %q is configured by both --exec and --webhook; a kind has one handler", kt.Kind)
		}
	}
	return nil
}
