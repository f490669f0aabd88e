package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
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
	// maxDeclaredKinds bounds --kinds as a worker's hello is bounded
	// (taskservice.MaxWorkerKinds).
	maxDeclaredKinds = 64
	// maxEventStreams: each stream may hold --event-buffer for its reader.
	maxEventStreams = 65536
	envPrefix       = "TASKD_"
	configOptName   = "config"
	logLevelChoice  = "trace, debug, info, warn, error"
)

// maxRebalanceRate bounds --rebalance-rate: each move is a few etcd
// operations of the leader's.
const maxRebalanceRate = 10000

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
		name: "kinds", arg: "KINDS", def: "(none)",
		help: "comma-separated kinds (at most 64, each 1-128 bytes) that remote workers will serve, declared before the first of them connects: " +
			"advertised with this node's kinds, so scheduling accepts them; their runs wait on this node, shown as waiting and using no attempt, " +
			"until a worker of the kind connects (a kind with --exec or --webhook here is refused)",
		set:   setKinds,
		check: func(c Config) error { return checkDeclaredKinds(c.Kinds, c.Exec, c.Webhook) },
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
		help:  "lateness after which a fire time has misfired, > 0 (several fire times a take-over, restart or resume finds past follow the misfire policy whatever it is)",
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
		name: "rebalance", arg: "", def: "true", boolean: true,
		help: "the placement leader moves identities from the most to the least loaded RUNNING node, a few at a time, until the spread is within --rebalance-tolerance " +
			"(a node that joins gets its share); --rebalance=false moves them only on MoveIdentity, draining and death; --rebalance alone means true",
		set: boolSetter(func(c *Config) *bool { return &c.Rebalance }),
	},
	{
		name: "rebalance-interval", arg: "DURATION", def: "10s",
		help:  "how often the placement leader compares the RUNNING nodes' identity counts, 1s to 1h",
		set:   durationSetter(func(c *Config) *time.Duration { return &c.RebalanceInterval }),
		check: func(c Config) error { return checkDurationRange(c.RebalanceInterval, time.Second, time.Hour) },
	},
	{
		name: "rebalance-rate", arg: "N", def: "50",
		help:  "the most identities rebalancing moves per --rebalance-interval, 1 to 10000",
		set:   intSetter(func(c *Config) *int { return &c.RebalanceRate }),
		check: func(c Config) error { return checkRange(c.RebalanceRate, 1, maxRebalanceRate) },
	},
	{
		name: "rebalance-tolerance", arg: "PERCENT", def: "10%",
		help:  "rebalancing stops once the most and the least loaded RUNNING node differ by at most this percentage of the mean identity count (and at least one identity), 0% to 100%",
		set:   percentSetter(func(c *Config) *int { return &c.RebalanceTolerance }),
		check: func(c Config) error { return checkRange(c.RebalanceTolerance, 0, 100) },
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
	// The exit codes of pkg/builtin's outcomes.go, and the lease deadline
	// of its start guard (Linux).
	"TASKD_EXIT_RETRY":        true,
	"TASKD_EXIT_PERMANENT":    true,
	"TASKD_EXIT_CANCEL":       true,
	"TASKD_EXIT_SNOOZE":       true,
	"TASKD_LEASE_DEADLINE_CS": true,
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
