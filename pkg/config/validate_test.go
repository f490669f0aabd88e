package config

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	long := strings.Repeat("k", 129)
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" = valid; else the option that must be named
	}{
		{"defaults", func(*Config) {}, ""},
		{"name 64 bytes", func(c *Config) { c.Name = strings.Repeat("n", 64) }, ""},
		{"name all allowed characters", func(c *Config) { c.Name = "Az09._-" }, ""},
		{"name empty", func(c *Config) { c.Name = "" }, "--name"},
		{"name 65 bytes", func(c *Config) { c.Name = strings.Repeat("n", 65) }, "--name"},
		{"name slash", func(c *Config) { c.Name = "a/b" }, "--name"},
		{"name space", func(c *Config) { c.Name = "a b" }, "--name"},
		{"name non-ASCII", func(c *Config) { c.Name = "nöde" }, "--name"},
		{"data-dir empty with embedded etcd", func(c *Config) { c.DataDir = "" }, "--data-dir"},
		{"data-dir empty with external etcd", func(c *Config) { c.DataDir = ""; c.Etcd = []string{"a:1"} }, ""},
		{"prefix root", func(c *Config) { c.Prefix = "/" }, ""},
		{"prefix no leading slash", func(c *Config) { c.Prefix = "taskd/" }, "--prefix"},
		{"prefix no trailing slash", func(c *Config) { c.Prefix = "/taskd" }, "--prefix"},
		{"prefix empty", func(c *Config) { c.Prefix = "" }, "--prefix"},
		{"prefix control", func(c *Config) { c.Prefix = "/a\n/" }, "--prefix"},
		{"listen any host", func(c *Config) { c.Listen = ":0" }, ""},
		{"listen IPv6", func(c *Config) { c.Listen = "[::1]:7420" }, ""},
		{"listen no port", func(c *Config) { c.Listen = "localhost" }, "--listen"},
		{"listen port name", func(c *Config) { c.Listen = "localhost:http" }, "--listen"},
		{"listen port too big", func(c *Config) { c.Listen = "localhost:65536" }, "--listen"},
		{"listen port negative", func(c *Config) { c.Listen = "localhost:-1" }, "--listen"},
		{"advertise name", func(c *Config) { c.Advertise = "taskd-1:7420" }, ""},
		{"advertise IPv6", func(c *Config) { c.Advertise = "[fd00::2]:7420" }, ""},
		{"advertise unspecified", func(c *Config) { c.Advertise = "0.0.0.0:7420" }, "--advertise"},
		{"advertise empty host", func(c *Config) { c.Advertise = ":7420" }, "--advertise"},
		{"advertise port 0", func(c *Config) { c.Advertise = "taskd-1:0" }, "--advertise"},
		{"advertise no port", func(c *Config) { c.Advertise = "taskd-1" }, "--advertise"},
		{"http no port", func(c *Config) { c.HTTP = "127.0.0.1" }, "--http"},
		{"metrics-listen apart", func(c *Config) { c.MetricsListen = "0.0.0.0:9100" }, ""},
		{"metrics-listen both port 0", func(c *Config) { c.HTTP, c.MetricsListen = "127.0.0.1:0", "127.0.0.1:0" }, ""},
		{"metrics-listen the --http address", func(c *Config) { c.MetricsListen = c.HTTP }, "--metrics-listen"},
		{"metrics-listen no port", func(c *Config) { c.MetricsListen = "0.0.0.0" }, "--metrics-listen"},
		{"console-host names, ports, addresses", func(c *Config) {
			c.ConsoleHosts = []string{"taskd.example.com", "proxy.example.com:8443", "10.0.0.5", "[fd00::5]:7421", "fd00::6"}
		}, ""},
		{"console-host scheme", func(c *Config) { c.ConsoleHosts = []string{"https://taskd.example.com"} }, "--console-host"},
		{"console-host path", func(c *Config) { c.ConsoleHosts = []string{"taskd.example.com/ui"} }, "--console-host"},
		{"console-host wildcard", func(c *Config) { c.ConsoleHosts = []string{"*.example.com"} }, "--console-host"},
		{"console-host port 0", func(c *Config) { c.ConsoleHosts = []string{"taskd.example.com:0"} }, "--console-host"},
		{"console-host empty host", func(c *Config) { c.ConsoleHosts = []string{":7421"} }, "--console-host"},
		{"console-host 254 bytes", func(c *Config) { c.ConsoleHosts = []string{strings.Repeat("a", 254)} }, "--console-host"},
		{"console-host 33 entries", func(c *Config) {
			for i := range 33 {
				c.ConsoleHosts = append(c.ConsoleHosts, fmt.Sprintf("h%d.example.com", i))
			}
		}, "--console-host"},
		{"kinds", func(c *Config) { c.Kinds = []string{"thumbnail", "mail"} }, ""},
		{"kinds 64", func(c *Config) {
			for i := range 64 {
				c.Kinds = append(c.Kinds, fmt.Sprintf("k%d", i))
			}
		}, ""},
		{"kinds 65", func(c *Config) {
			for i := range 65 {
				c.Kinds = append(c.Kinds, fmt.Sprintf("k%d", i))
			}
		}, "--kinds"},
		{"kinds 129 bytes", func(c *Config) { c.Kinds = []string{strings.Repeat("k", 129)} }, "--kinds"},
		{"kinds twice", func(c *Config) { c.Kinds = []string{"mail", "mail"} }, "--kinds"},
		{"kinds with a space", func(c *Config) { c.Kinds = []string{"a b"} }, "--kinds"},
		{"kinds with an exec handler", func(c *Config) {
			c.Kinds = []string{"mail"}
			c.Exec = []KindTarget{{Kind: "mail", Target: "true"}}
		}, "--kinds"},
		{"kinds with a webhook", func(c *Config) {
			c.Kinds = []string{"hook"}
			c.Webhook = []KindTarget{{Kind: "hook", Target: "http://127.0.0.1:1/"}}
		}, "--kinds"},
		{"http empty port", func(c *Config) { c.HTTP = "127.0.0.1:" }, "--http"},
		{"etcd-listen https", func(c *Config) { c.EtcdListen = "https://10.1.2.3:2379"; c.TLSCert, c.TLSKey = "/c", "/k" }, ""},
		{"etcd-listen https without a certificate", func(c *Config) { c.EtcdListen = "https://10.1.2.3:2379" }, "--etcd-listen"},
		{"etcd-listen https, external etcd", func(c *Config) { c.EtcdListen = "https://10.1.2.3:2379"; c.Etcd = []string{"e:2379"} }, ""},
		{"tls-cert without key", func(c *Config) { c.TLSCert = "/c" }, "--tls-cert"},
		{"tls-key without cert", func(c *Config) { c.TLSKey = "/k" }, "--tls-cert"},
		{"tls-client-ca without cert", func(c *Config) { c.TLSClientCA = "/ca" }, "--tls-client-ca"},
		{"tls-ca without cert", func(c *Config) { c.TLSCA = "/ca" }, "--tls-ca"},
		{"tls all", func(c *Config) { c.TLSCert, c.TLSKey, c.TLSClientCA, c.TLSCA = "/c", "/k", "/ca", "/ca2" }, ""},
		{"etcd-cert without key", func(c *Config) { c.EtcdCert = "/c" }, "--etcd-cert"},
		{"etcd-key without cert", func(c *Config) { c.EtcdKey = "/k" }, "--etcd-cert"},
		{"etcd-user without password", func(c *Config) { c.EtcdUser = "u" }, "--etcd-user"},
		{"etcd-password-file without user", func(c *Config) { c.EtcdPasswordFile = "/pw" }, "--etcd-user"},
		{"etcd-listen no scheme", func(c *Config) { c.EtcdListen = "127.0.0.1:2379" }, "--etcd-listen"},
		{"etcd-listen ftp", func(c *Config) { c.EtcdListen = "ftp://127.0.0.1:2379" }, "--etcd-listen"},
		{"etcd-listen no port", func(c *Config) { c.EtcdListen = "http://127.0.0.1" }, "--etcd-listen"},
		{"etcd-listen no host", func(c *Config) { c.EtcdListen = "http://:2379" }, "--etcd-listen"},
		{"etcd-listen path", func(c *Config) { c.EtcdListen = "http://127.0.0.1:2379/x" }, "--etcd-listen"},
		{"etcd-listen bad port", func(c *Config) { c.EtcdListen = "http://127.0.0.1:99999" }, "--etcd-listen"},
		{"etcd endpoints", func(c *Config) {
			c.Etcd = []string{"a:2379", "http://b:2379", "https://c", "unix:///run/etcd.sock", "[::1]:2379"}
		}, ""},
		{"etcd empty endpoint", func(c *Config) { c.Etcd = []string{"a:2379", ""} }, "--etcd"},
		{"etcd no port", func(c *Config) { c.Etcd = []string{"a"} }, "--etcd"},
		{"etcd bad scheme", func(c *Config) { c.Etcd = []string{"ftp://a:1"} }, "--etcd"},
		{"etcd URL without host", func(c *Config) { c.Etcd = []string{"http://"} }, "--etcd"},
		{"lease-ttl 2s", func(c *Config) { c.LeaseTTL = 2 * time.Second }, ""},
		{"lease-ttl 1h", func(c *Config) { c.LeaseTTL = time.Hour }, ""},
		{"lease-ttl 1s", func(c *Config) { c.LeaseTTL = time.Second }, "--lease-ttl"},
		{"lease-ttl over 1h", func(c *Config) { c.LeaseTTL = time.Hour + time.Second }, "--lease-ttl"},
		{"lease-ttl fractional", func(c *Config) { c.LeaseTTL = 2500 * time.Millisecond }, "--lease-ttl"},
		{"handoff-period 0", func(c *Config) { c.HandoffPeriod = 0 }, "--handoff-period"},
		{"handoff-start 0", func(c *Config) { c.HandoffStart = 0 }, ""},
		{"handoff-start negative", func(c *Config) { c.HandoffStart = -1 }, "--handoff-start"},
		{"vote-delay 0", func(c *Config) { c.VoteDelay = 0 }, ""},
		{"vote-delay negative", func(c *Config) { c.VoteDelay = -time.Second }, "--vote-delay"},
		{"worker-heartbeat 0", func(c *Config) { c.WorkerHeartbeat = 0 }, "--worker-heartbeat"},
		{"max-worker-streams 1", func(c *Config) { c.MaxWorkerStreams = 1 }, ""},
		{"max-worker-streams 0", func(c *Config) { c.MaxWorkerStreams = 0 }, "--max-worker-streams"},
		{"max-worker-streams over 65536", func(c *Config) { c.MaxWorkerStreams = 65537 }, "--max-worker-streams"},
		{"remove-delay negative", func(c *Config) { c.RemoveDelay = -time.Second }, "--remove-delay"},
		{"misfire-threshold 0", func(c *Config) { c.MisfireThreshold = 0 }, "--misfire-threshold"},
		{"drain-timeout 0", func(c *Config) { c.DrainTimeout = 0 }, ""},
		{"drain-timeout negative", func(c *Config) { c.DrainTimeout = -time.Second }, "--drain-timeout"},
		{"rebalance-interval 0", func(c *Config) { c.RebalanceInterval = 0 }, "--rebalance-interval"},
		{"rebalance-interval 1s", func(c *Config) { c.RebalanceInterval = time.Second }, ""},
		{"rebalance-interval under 1s", func(c *Config) { c.RebalanceInterval = time.Second - 1 }, "--rebalance-interval"},
		{"rebalance-rate 1", func(c *Config) { c.RebalanceRate = 1 }, ""},
		{"rebalance-rate 10000", func(c *Config) { c.RebalanceRate = 10000 }, ""},
		{"rebalance-rate 0", func(c *Config) { c.RebalanceRate = 0 }, "--rebalance-rate"},
		{"rebalance-rate 10001", func(c *Config) { c.RebalanceRate = 10001 }, "--rebalance-rate"},
		{"rebalance-tolerance 0", func(c *Config) { c.RebalanceTolerance = 0 }, ""},
		{"rebalance-tolerance 100", func(c *Config) { c.RebalanceTolerance = 100 }, ""},
		{"rebalance-tolerance negative", func(c *Config) { c.RebalanceTolerance = -1 }, "--rebalance-tolerance"},
		{"rebalance-tolerance 101", func(c *Config) { c.RebalanceTolerance = 101 }, "--rebalance-tolerance"},
		{"look-ahead 0", func(c *Config) { c.LookAhead = 0 }, ""},
		{"look-ahead negative", func(c *Config) { c.LookAhead = -time.Second }, "--look-ahead"},
		{"cold-after 0", func(c *Config) { c.ColdAfter = 0 }, ""},
		{"cold-after negative", func(c *Config) { c.ColdAfter = -time.Second }, "--cold-after"},
		{"retention negative", func(c *Config) { c.Retention = -time.Second }, "--retention"},
		{"max-payload 1", func(c *Config) { c.MaxPayload = 1 }, ""},
		{"max-payload 1MiB", func(c *Config) { c.MaxPayload = 1 << 20 }, ""},
		{"max-payload 0", func(c *Config) { c.MaxPayload = 0 }, "--max-payload"},
		{"max-payload over 1MiB", func(c *Config) { c.MaxPayload = 1<<20 + 1 }, "--max-payload"},
		{"event-buffer 64KiB", func(c *Config) { c.EventBuffer = 64 << 10 }, ""},
		{"event-buffer 64MiB", func(c *Config) { c.EventBuffer = 64 << 20 }, ""},
		{"event-buffer under 64KiB", func(c *Config) { c.EventBuffer = 64<<10 - 1 }, "--event-buffer"},
		{"event-buffer over 64MiB", func(c *Config) { c.EventBuffer = 64<<20 + 1 }, "--event-buffer"},
		{"history 1000", func(c *Config) { c.History = 1000 }, ""},
		{"history 0", func(c *Config) { c.History = 0 }, "--history"},
		{"history 1001", func(c *Config) { c.History = 1001 }, "--history"},
		{"max-catch-up 0", func(c *Config) { c.MaxCatchUp = 0 }, "--max-catch-up"},
		{"workers 10000", func(c *Config) { c.Workers = 10000 }, ""},
		{"workers 0", func(c *Config) { c.Workers = 0 }, "--workers"},
		{"workers 10001", func(c *Config) { c.Workers = 10001 }, "--workers"},
		{"log-level trace", func(c *Config) { c.LogLevel = "trace" }, ""},
		{"log-level bad", func(c *Config) { c.LogLevel = "loud" }, "--log-level"},
		{"log-format bad", func(c *Config) { c.LogFormat = "xml" }, "--log-format"},
		{"log-summary negative", func(c *Config) { c.LogSummary = -time.Second }, "--log-summary"},
		{"otlp-endpoint ok", func(c *Config) { c.OTLPEndpoint = "[::1]:4317" }, ""},
		{"otlp-endpoint no port", func(c *Config) { c.OTLPEndpoint = "collector" }, "--otlp-endpoint"},
		{"otlp-endpoint no host", func(c *Config) { c.OTLPEndpoint = ":4317" }, "--otlp-endpoint"},
		{"exec ok", func(c *Config) { c.Exec = []KindTarget{{"report.daily", "echo hi"}, {strings.Repeat("k", 128), "x"}} }, ""},
		{"exec empty kind", func(c *Config) { c.Exec = []KindTarget{{"", "echo"}} }, "--exec"},
		{"exec kind space", func(c *Config) { c.Exec = []KindTarget{{"a b", "echo"}} }, "--exec"},
		{"exec kind control", func(c *Config) { c.Exec = []KindTarget{{"a\x01", "echo"}} }, "--exec"},
		{"exec kind too long", func(c *Config) { c.Exec = []KindTarget{{long, "echo"}} }, "--exec"},
		{"exec empty target", func(c *Config) { c.Exec = []KindTarget{{"k", " "}} }, "--exec"},
		{"limit ok", func(c *Config) { c.Limits = []KindLimit{{"report.daily", 1}, {strings.Repeat("k", 128), 10000}} }, ""},
		{"limit 0", func(c *Config) { c.Limits = []KindLimit{{"k", 0}} }, "--limit"},
		{"limit negative", func(c *Config) { c.Limits = []KindLimit{{"k", -3}} }, "--limit"},
		{"limit 10001", func(c *Config) { c.Limits = []KindLimit{{"k", 10001}} }, "--limit"},
		{"limit empty kind", func(c *Config) { c.Limits = []KindLimit{{"", 1}} }, "--limit"},
		{"limit kind space", func(c *Config) { c.Limits = []KindLimit{{"a b", 1}} }, "--limit"},
		{"limit kind too long", func(c *Config) { c.Limits = []KindLimit{{long, 1}} }, "--limit"},
		{"webhook ok", func(c *Config) { c.Webhook = []KindTarget{{"k", "https://example.com/hook?x=1"}} }, ""},
		{"webhook relative", func(c *Config) { c.Webhook = []KindTarget{{"k", "/hook"}} }, "--webhook"},
		{"webhook ftp", func(c *Config) { c.Webhook = []KindTarget{{"k", "ftp://example.com"}} }, "--webhook"},
		{"webhook no host", func(c *Config) { c.Webhook = []KindTarget{{"k", "http:///x"}} }, "--webhook"},
		{"webhook empty target", func(c *Config) { c.Webhook = []KindTarget{{"k", ""}} }, "--webhook"},
		{"webhook kind space", func(c *Config) { c.Webhook = []KindTarget{{" k", "http://x"}} }, "--webhook"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Name = "node-1"
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			wantErr(t, err, tc.want+": ")
			if lines := strings.Count(err.Error(), "\n") + 1; lines != 1 {
				t.Errorf("Validate() reported %d problems, want 1: %v", lines, err)
			}
		})
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	c := Default()
	c.Name = ""
	c.LeaseTTL = time.Second
	c.Workers = 0
	err := c.Validate()
	wantErr(t, err, "--name: ", "--lease-ttl: ", "etcd's minimum lease TTL", "--workers: ")
}

// TestLoadValidationSource checks that a value that parses but is out of
// range is reported with the option and where it was set.
func TestLoadValidationSource(t *testing.T) {
	requireValidHostname(t)
	file := writeFile(t, "\nworkers = 0\n")
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"flag", []string{"--lease-ttl=1s"}, nil, []string{"--lease-ttl: 1s is below 2s", "etcd's minimum lease TTL", "command-line flag --lease-ttl"}},
		{"env", nil, []string{"TASKD_PREFIX=taskd"}, []string{"--prefix: ", "environment variable TASKD_PREFIX"}},
		{"file", []string{"--config", file}, nil, []string{"--workers: ", "config file " + file + ", line 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.args, tc.env, io.Discard)
			wantErr(t, err, tc.want...)
		})
	}
}

func TestInvalidValue(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name string
		args []string
		env  []string
		file string
		want []string
	}{
		{"duration flag", []string{"--lease-ttl", "abc"}, nil, "", []string{`invalid value "abc" for --lease-ttl: time: invalid duration`}},
		{"duration env", nil, []string{"TASKD_LEASE_TTL=abc"}, "", []string{`invalid value "abc" for --lease-ttl`, "environment variable TASKD_LEASE_TTL", "time: invalid duration"}},
		{"duration file", nil, nil, "# c\nlease-ttl = abc\n", []string{`invalid value "abc" for --lease-ttl`, "line 2", "time: invalid duration"}},
		{"bare number duration", []string{"--vote-delay=5000"}, nil, "", []string{`invalid value "5000" for --vote-delay`}},
		{"integer", []string{"--history=x"}, nil, "", []string{`invalid value "x" for --history`}},
		{"integer with unit", nil, []string{"TASKD_WORKERS=8k"}, "", []string{`invalid value "8k" for --workers`, "TASKD_WORKERS"}},
		{"size fraction", []string{"--max-payload=1.5MiB"}, nil, "", []string{`invalid value "1.5MiB" for --max-payload`}},
		{"size KB", []string{"--max-payload=12KB"}, nil, "", []string{`invalid value "12KB" for --max-payload`}},
		{"size negative", []string{"--max-payload=-1"}, nil, "", []string{`invalid value "-1" for --max-payload`}},
		{"size huge", []string{"--max-payload=99999999999MiB"}, nil, "", []string{`invalid value "99999999999MiB" for --max-payload`}},
		{"size too big", []string{"--max-payload=2MiB"}, nil, "", []string{"--max-payload: ", "1MiB"}},
		{"exec without =", []string{"--exec", "nokind"}, nil, "", []string{`invalid value "nokind" for --exec`, "KIND=COMMAND"}},
		{"limit without =", []string{"--limit", "report"}, nil, "", []string{`invalid value "report" for --limit`, "KIND=N"}},
		{"limit not a number", nil, []string{"TASKD_LIMIT=report=two"}, "", []string{`invalid value "report=two" for --limit`, "TASKD_LIMIT", "whole number"}},
		{"limit fraction", nil, nil, "limit = report=1.5\n", []string{`invalid value "report=1.5" for --limit`, "line 1"}},
		{"webhook without =", nil, nil, "webhook = http://x\n", []string{`invalid value "http://x" for --webhook`, "line 1", "KIND=URL"}},
		{"percentage without %", []string{"--rebalance-tolerance=10"}, nil, "", []string{`invalid value "10" for --rebalance-tolerance`, "percentage"}},
		{"percentage fraction", nil, []string{"TASKD_REBALANCE_TOLERANCE=2.5%"}, "", []string{`invalid value "2.5%" for --rebalance-tolerance`, "TASKD_REBALANCE_TOLERANCE"}},
		{"percentage too big", []string{"--rebalance-tolerance=101%"}, nil, "", []string{"--rebalance-tolerance: ", "100"}},
		{"bool", []string{"--rebalance=maybe"}, nil, "", []string{`invalid value "maybe" for --rebalance`, "true or false"}},
		{"overridden bad file value still fails", []string{"--lease-ttl=5s"}, nil, "lease-ttl = abc\n", []string{`invalid value "abc" for --lease-ttl`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			_, err := Load(args, tc.env, io.Discard)
			wantErr(t, err, tc.want...)
		})
	}
}

func TestSizes(t *testing.T) {
	requireValidHostname(t)
	for in, want := range map[string]int{"1": 1, "1024": 1024, "256KiB": 256 << 10, "1MiB": 1 << 20, "0001KiB": 1024} {
		got, err := Load([]string{"--max-payload", in}, nil, io.Discard)
		if err != nil {
			t.Errorf("--max-payload %s: %v", in, err)
			continue
		}
		if got.MaxPayload != want {
			t.Errorf("--max-payload %s = %d, want %d", in, got.MaxPayload, want)
		}
	}
}
