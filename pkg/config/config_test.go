package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// requireValidHostname skips tests that rely on the default name when the
// machine's host name is not a valid node name.
func requireValidHostname(t *testing.T) {
	t.Helper()
	h, err := os.Hostname()
	if err != nil || checkName(h) != nil {
		t.Skipf("host name %q (%v) is not a valid node name", h, err)
	}
}

// writeFile writes a config file into a fresh temporary directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "taskd.conf")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantErr fails unless err is non-nil and contains every substring.
func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestDefaultsMatchSpec(t *testing.T) {
	host, _ := os.Hostname()
	want := Config{
		Name:             host,
		DataDir:          "./taskd-data",
		Etcd:             nil,
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
		Kinds:            nil,
		MaxEventStreams:  256,
		RemoveDelay:      5000 * time.Millisecond,
		MisfireThreshold: 60 * time.Second,
		DrainTimeout:     30 * time.Second,
		LookAhead:        time.Second,
		ColdAfter:        2 * time.Minute,
		MaxPayload:       256 * 1024,
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
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Default() = %+v\nwant %+v", got, want)
	}

	requireValidHostname(t)
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	got, err := Load(nil, []string{"PATH=/bin", "HOME=/root", "TASKDX=1"}, io.Discard)
	if err != nil {
		t.Fatalf("Load with nothing set: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load with nothing set = %+v\nwant %+v", got, want)
	}
}

// TestHelpDefaultsParse checks that every default shown in the help parses
// to the value Default returns.
func TestHelpDefaultsParse(t *testing.T) {
	requireValidHostname(t)
	for _, o := range options {
		if strings.HasPrefix(o.def, "(") || o.name == "name" {
			continue
		}
		t.Run(o.name, func(t *testing.T) {
			got, err := Load([]string{"--" + o.name + "=" + o.def}, nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, Default()) {
				t.Fatalf("--%s=%s gives %+v, want Default() %+v", o.name, o.def, got, Default())
			}
		})
	}
}

// samples holds, for every option but config, a valid non-default value and
// how it changes Default(), including the effect of its samplePartners.
var samples = map[string]struct {
	value string
	apply func(*Config)
}{
	"tls-cert": {"/etc/taskd/node.crt", func(c *Config) { c.TLSCert, c.TLSKey = "/etc/taskd/node.crt", "/k" }},
	"tls-key":  {"/etc/taskd/node.key", func(c *Config) { c.TLSCert, c.TLSKey = "/c", "/etc/taskd/node.key" }},
	"tls-client-ca": {"/etc/taskd/ca.crt", func(c *Config) {
		c.TLSClientCA, c.TLSCert, c.TLSKey = "/etc/taskd/ca.crt", "/c", "/k"
	}},
	"tls-ca": {"/etc/taskd/peers.crt", func(c *Config) {
		c.TLSCA, c.TLSCert, c.TLSKey = "/etc/taskd/peers.crt", "/c", "/k"
	}},
	"etcd-ca":   {"/etc/taskd/etcd-ca.crt", func(c *Config) { c.EtcdCA = "/etc/taskd/etcd-ca.crt" }},
	"etcd-cert": {"/e.crt", func(c *Config) { c.EtcdCert, c.EtcdKey = "/e.crt", "/e.key" }},
	"etcd-key":  {"/e.key", func(c *Config) { c.EtcdCert, c.EtcdKey = "/e.crt", "/e.key" }},
	"etcd-user": {"taskd", func(c *Config) { c.EtcdUser, c.EtcdPasswordFile = "taskd", "/pw" }},
	"etcd-password-file": {"/pw", func(c *Config) {
		c.EtcdUser, c.EtcdPasswordFile = "taskd", "/pw"
	}},
	"name":           {"node-7", func(c *Config) { c.Name = "node-7" }},
	"data-dir":       {"/var/lib/taskd", func(c *Config) { c.DataDir = "/var/lib/taskd" }},
	"etcd":           {"10.0.0.1:2379, http://10.0.0.2:2379", func(c *Config) { c.Etcd = []string{"10.0.0.1:2379", "http://10.0.0.2:2379"} }},
	"etcd-listen":    {"http://0.0.0.0:2389", func(c *Config) { c.EtcdListen = "http://0.0.0.0:2389" }},
	"prefix":         {"/other/", func(c *Config) { c.Prefix = "/other/" }},
	"listen":         {":9000", func(c *Config) { c.Listen = ":9000" }},
	"advertise":      {"taskd-2:7420", func(c *Config) { c.Advertise = "taskd-2:7420" }},
	"http":           {"0.0.0.0:9001", func(c *Config) { c.HTTP = "0.0.0.0:9001" }},
	"metrics-listen": {"0.0.0.0:9002", func(c *Config) { c.MetricsListen = "0.0.0.0:9002" }},
	"console":        {"false", func(c *Config) { c.Console = false }},
	"console-host": {"taskd.example.com, proxy.example.com:8443", func(c *Config) {
		c.ConsoleHosts = []string{"taskd.example.com", "proxy.example.com:8443"}
	}},
	"lease-ttl": {"7s", func(c *Config) { c.LeaseTTL = 7 * time.Second }},
	"handoff-period": {"50ms", func(c *Config) {
		c.HandoffPeriod = 50 * time.Millisecond
	}},
	"handoff-start":      {"0s", func(c *Config) { c.HandoffStart = 0 }},
	"vote-delay":         {"50ms", func(c *Config) { c.VoteDelay = 50 * time.Millisecond }},
	"remove-delay":       {"1s", func(c *Config) { c.RemoveDelay = time.Second }},
	"worker-heartbeat":   {"250ms", func(c *Config) { c.WorkerHeartbeat = 250 * time.Millisecond }},
	"max-worker-streams": {"8", func(c *Config) { c.MaxWorkerStreams = 8 }},
	"max-event-streams":  {"9", func(c *Config) { c.MaxEventStreams = 9 }},
	"kinds":              {"thumbnail, mail", func(c *Config) { c.Kinds = []string{"thumbnail", "mail"} }},
	"misfire-threshold":  {"2m", func(c *Config) { c.MisfireThreshold = 2 * time.Minute }},
	"drain-timeout":      {"5s", func(c *Config) { c.DrainTimeout = 5 * time.Second }},
	"look-ahead":         {"250ms", func(c *Config) { c.LookAhead = 250 * time.Millisecond }},
	"cold-after":         {"10m", func(c *Config) { c.ColdAfter = 10 * time.Minute }},
	"max-payload":        {"1MiB", func(c *Config) { c.MaxPayload = 1 << 20 }},
	"event-buffer":       {"4MiB", func(c *Config) { c.EventBuffer = 4 << 20 }},
	"history":            {"5", func(c *Config) { c.History = 5 }},
	"retention":          {"1h", func(c *Config) { c.Retention = time.Hour }},
	"max-catch-up":       {"3", func(c *Config) { c.MaxCatchUp = 3 }},
	"max-overlap":        {"7", func(c *Config) { c.MaxOverlap = 7 }},
	"workers":            {"8", func(c *Config) { c.Workers = 8 }},
	"replace":            {"true", func(c *Config) { c.Replace = true }},
	"log-level":          {"debug", func(c *Config) { c.LogLevel = "debug" }},
	"log-format":         {"json", func(c *Config) { c.LogFormat = "json" }},
	"log-summary":        {"5s", func(c *Config) { c.LogSummary = 5 * time.Second }},
	"pprof":              {"true", func(c *Config) { c.Pprof = true }},
	"otlp-endpoint":      {"collector:4317", func(c *Config) { c.OTLPEndpoint = "collector:4317" }},
	"otlp-insecure":      {"true", func(c *Config) { c.OTLPInsecure = true }},
	"tokens-file":        {"/etc/taskd/tokens", func(c *Config) { c.TokensFile = "/etc/taskd/tokens" }},
	"insecure":           {"true", func(c *Config) { c.Insecure = true }},
	"exec":               {"echo=cat", func(c *Config) { c.Exec = []KindTarget{{"echo", "cat"}} }},
	"limit":              {"report=2", func(c *Config) { c.Limits = []KindLimit{{"report", 2}} }},
	"webhook": {"hook=https://example.com/x", func(c *Config) {
		c.Webhook = []KindTarget{{"hook", "https://example.com/x"}}
	}},

	"rebalance":           {"false", func(c *Config) { c.Rebalance = false }},
	"rebalance-interval":  {"1m", func(c *Config) { c.RebalanceInterval = time.Minute }},
	"rebalance-rate":      {"500", func(c *Config) { c.RebalanceRate = 500 }},
	"rebalance-tolerance": {"25%", func(c *Config) { c.RebalanceTolerance = 25 }},
}

// samplePartners holds the flags an option's sample needs set as well: a
// certificate needs its key, a user a password.
var samplePartners = map[string][]string{
	"tls-cert":           {"--tls-key=/k"},
	"tls-key":            {"--tls-cert=/c"},
	"tls-client-ca":      {"--tls-cert=/c", "--tls-key=/k"},
	"tls-ca":             {"--tls-cert=/c", "--tls-key=/k"},
	"etcd-cert":          {"--etcd-key=/e.key"},
	"etcd-key":           {"--etcd-cert=/e.crt"},
	"etcd-user":          {"--etcd-password-file=/pw"},
	"etcd-password-file": {"--etcd-user=taskd"},
}

// TestEveryOptionFromEverySource sets each option as --opt=v, --opt v,
// -opt v, TASKD_OPT=v and "opt = v" in a file.
func TestEveryOptionFromEverySource(t *testing.T) {
	requireValidHostname(t)
	for _, o := range options {
		if o.name == configOptName {
			continue
		}
		s, ok := samples[o.name]
		if !ok {
			t.Errorf("no sample value for option %q", o.name)
			continue
		}
		want := Default()
		s.apply(&want)
		file := writeFile(t, o.name+" = "+s.value+"\n")
		wantFile := want
		wantFile.ConfigFile = file
		cases := []struct {
			how  string
			args []string
			env  []string
			want Config
		}{
			{"--opt=v", []string{"--" + o.name + "=" + s.value}, nil, want},
			{"--opt v", []string{"--" + o.name, s.value}, nil, want},
			{"-opt v", []string{"-" + o.name, s.value}, nil, want},
			{"-opt=v", []string{"-" + o.name + "=" + s.value}, nil, want},
			{"env", nil, []string{envName(o.name) + "=" + s.value}, want},
			{"file", []string{"--config", file}, nil, wantFile},
		}
		for i := range cases {
			cases[i].args = append(cases[i].args, samplePartners[o.name]...)
		}
		if o.boolean {
			// A bare boolean flag means true and takes no separate value
			// (whatever the sample, which is false for --console).
			bare := Default()
			if err := o.set(&bare, "true"); err != nil {
				t.Fatal(err)
			}
			cases[1].how, cases[1].args, cases[1].want = "--opt", []string{"--" + o.name}, bare
			cases[2].how, cases[2].args, cases[2].want = "-opt", []string{"-" + o.name}, bare
		}
		for _, tc := range cases {
			t.Run(o.name+"/"+tc.how, func(t *testing.T) {
				got, err := Load(tc.args, tc.env, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
			})
		}
	}
}

func TestConfigFileLocation(t *testing.T) {
	requireValidHostname(t)
	a := writeFile(t, "lease-ttl = 3s\n")
	b := writeFile(t, "lease-ttl = 4s\n")
	tests := []struct {
		name     string
		args     []string
		env      []string
		wantFile string
		wantTTL  time.Duration
	}{
		{"none", nil, nil, "", 10 * time.Second},
		{"env", nil, []string{"TASKD_CONFIG=" + a}, a, 3 * time.Second},
		{"flag", []string{"--config=" + b}, nil, b, 4 * time.Second},
		{"flag beats env", []string{"-config", b}, []string{"TASKD_CONFIG=" + a}, b, 4 * time.Second},
		{"last flag wins", []string{"--config", a, "--config", b}, nil, b, 4 * time.Second},
		{"empty means none", []string{"--config="}, []string{"TASKD_CONFIG=" + a}, "", 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(tc.args, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got.ConfigFile != tc.wantFile || got.LeaseTTL != tc.wantTTL {
				t.Fatalf("ConfigFile %q, LeaseTTL %v; want %q, %v", got.ConfigFile, got.LeaseTTL, tc.wantFile, tc.wantTTL)
			}
		})
	}
}

func TestPrecedence(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name            string
		file, env, flag bool
		wantTTL         time.Duration
		wantExec        []KindTarget
	}{
		{"default", false, false, false, 10 * time.Second, nil},
		{"file", true, false, false, 3 * time.Second, []KindTarget{{"f1", "x"}, {"f2", "y"}}},
		{"env", false, true, false, 4 * time.Second, []KindTarget{{"e1", "x"}, {"e2", "y"}}},
		{"flag", false, false, true, 5 * time.Second, []KindTarget{{"g1", "x"}, {"g2", "y"}}},
		{"env beats file", true, true, false, 4 * time.Second, []KindTarget{{"e1", "x"}, {"e2", "y"}}},
		{"flag beats file", true, false, true, 5 * time.Second, []KindTarget{{"g1", "x"}, {"g2", "y"}}},
		{"flag beats env", false, true, true, 5 * time.Second, []KindTarget{{"g1", "x"}, {"g2", "y"}}},
		{"flag beats env and file", true, true, true, 5 * time.Second, []KindTarget{{"g1", "x"}, {"g2", "y"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args, env []string
			if tc.file {
				args = append(args, "--config", writeFile(t, "lease-ttl = 3s\nexec = f1=x\nexec = f2=y\nhistory = 7\n"))
			}
			if tc.env {
				env = append(env, "TASKD_LEASE_TTL=4s", "TASKD_EXEC=e1=x", "TASKD_EXEC_2=e2=y")
			}
			if tc.flag {
				args = append(args, "--lease-ttl", "5s", "--exec", "g1=x", "--exec=g2=y")
			}
			got, err := Load(args, env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got.LeaseTTL != tc.wantTTL {
				t.Errorf("LeaseTTL = %v, want %v", got.LeaseTTL, tc.wantTTL)
			}
			if !reflect.DeepEqual(got.Exec, tc.wantExec) {
				t.Errorf("Exec = %v, want %v", got.Exec, tc.wantExec)
			}
			// An option set only in the file survives higher sources that
			// do not mention it.
			if wantHistory := map[bool]int{true: 7, false: 20}[tc.file]; got.History != wantHistory {
				t.Errorf("History = %d, want %d", got.History, wantHistory)
			}
		})
	}
}

func TestRepeatable(t *testing.T) {
	requireValidHostname(t)
	execFile := writeFile(t, "exec = a=echo a\n# comment\nexec = \"b=echo 'b; c'\"\nwebhook = h=http://localhost:8080/h\n")
	tests := []struct {
		name        string
		args, env   []string
		wantExec    []KindTarget
		wantWebhook []KindTarget
	}{
		{
			name:     "flags",
			args:     []string{"--exec", "a=echo a", "-exec=b=echo x=y", "--webhook", "h=https://h.example/x", "--webhook=i=http://i.example"},
			wantExec: []KindTarget{{"a", "echo a"}, {"b", "echo x=y"}},
			wantWebhook: []KindTarget{
				{"h", "https://h.example/x"}, {"i", "http://i.example"},
			},
		},
		{
			name:        "env: one entry per variable, never split",
			env:         []string{"TASKD_EXEC=digest=cd jobs; ./send\n./after", "TASKD_WEBHOOK= h=https://h.example/x;y \n"},
			wantExec:    []KindTarget{{"digest", "cd jobs; ./send\n./after"}},
			wantWebhook: []KindTarget{{"h", "https://h.example/x;y"}},
		},
		{
			name: "env: further entries in suffixed variables, in sorted order",
			env: []string{"TASKD_EXEC_b=c=echo c; echo d", "TASKD_EXEC_2=b=echo b", "TASKD_EXEC=a=echo a",
				"TASKD_EXEC_10=x=true", "TASKD_WEBHOOK_1=i=http://i.example", "TASKD_WEBHOOK_0=h=https://h.example/x"},
			wantExec:    []KindTarget{{"a", "echo a"}, {"x", "true"}, {"b", "echo b"}, {"c", "echo c; echo d"}},
			wantWebhook: []KindTarget{{"h", "https://h.example/x"}, {"i", "http://i.example"}},
		},
		{
			name:     "env: suffixed variables alone, empty ones add nothing",
			env:      []string{"TASKD_EXEC_1=a=echo a", "TASKD_EXEC_2=", "TASKD_EXEC_3= "},
			wantExec: []KindTarget{{"a", "echo a"}},
		},
		{
			name:        "file",
			args:        []string{"--config", execFile},
			wantExec:    []KindTarget{{"a", "echo a"}, {"b", "echo 'b; c'"}},
			wantWebhook: []KindTarget{{"h", "http://localhost:8080/h"}},
		},
		{
			name:        "env replaces the file's entries",
			args:        []string{"--config", execFile},
			env:         []string{"TASKD_EXEC_z=z=true"},
			wantExec:    []KindTarget{{"z", "true"}},
			wantWebhook: []KindTarget{{"h", "http://localhost:8080/h"}},
		},
		{
			name:        "empty env clears the file's entries",
			args:        []string{"--config", execFile},
			env:         []string{"TASKD_EXEC=", "TASKD_WEBHOOK_1= "},
			wantExec:    nil,
			wantWebhook: nil,
		},
		{
			name:        "flags replace env and file",
			args:        []string{"--config", execFile, "--webhook", "w=https://w.example"},
			env:         []string{"TASKD_WEBHOOK=v=https://v.example"},
			wantExec:    []KindTarget{{"a", "echo a"}, {"b", "echo 'b; c'"}},
			wantWebhook: []KindTarget{{"w", "https://w.example"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(tc.args, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Exec, tc.wantExec) {
				t.Errorf("Exec = %q, want %q", got.Exec, tc.wantExec)
			}
			if !reflect.DeepEqual(got.Webhook, tc.wantWebhook) {
				t.Errorf("Webhook = %q, want %q", got.Webhook, tc.wantWebhook)
			}
		})
	}
}

func TestKindConfiguredOnce(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"exec twice", []string{"--exec", "k=a", "--exec", "k=b"}, nil, []string{"--exec", `kind "k"`}},
		{"limit twice", []string{"--limit", "k=1", "--limit", "k=2"}, nil, []string{"--limit", `kind "k"`}},
		{"webhook twice", []string{"--webhook", "k=http://a", "--webhook", "k=http://b"}, nil, []string{"--webhook", `kind "k"`}},
		{"exec and webhook", []string{"--exec", "k=a"}, []string{"TASKD_WEBHOOK=k=https://x"}, []string{"--webhook", `kind "k"`, "--exec", "environment variable TASKD_WEBHOOK"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.args, tc.env, io.Discard)
			wantErr(t, err, tc.want...)
		})
	}
}

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

func TestUnknownOption(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name    string
		args    []string
		env     []string
		file    string
		want    []string
		notWant string
	}{
		{"flag", []string{"--foo", "1"}, nil, "", []string{`unknown option "foo" (command-line flag --foo)`}, "did you mean"},
		{"single-dash flag", []string{"-zzzzzz=1"}, nil, "", []string{`unknown option "zzzzzz" (command-line flag -zzzzzz)`}, "did you mean"},
		{"flag suggestion", []string{"--lease-tl", "3s"}, nil, "", []string{`unknown option "lease-tl"`, "did you mean --lease-ttl?"}, ""},
		{"flag case", []string{"--Name=x"}, nil, "", []string{`unknown option "Name"`, "did you mean --name?"}, ""},
		{"env", nil, []string{"TASKD_FOO=1"}, "", []string{`unknown option "foo" (environment variable TASKD_FOO)`}, "did you mean"},
		{"env suggestion", nil, []string{"TASKD_WORKER=3"}, "", []string{"environment variable TASKD_WORKER", "did you mean TASKD_WORKERS?"}, ""},
		{"env lower case", nil, []string{"TASKD_lease_ttl=3s"}, "", []string{"environment variable TASKD_lease_ttl", "did you mean TASKD_LEASE_TTL?"}, ""},
		{"env every unknown reported", nil, []string{"TASKD_ZZZ=1", "TASKD_FOO=1"}, "", []string{"TASKD_FOO", "TASKD_ZZZ"}, ""},
		{"env suffix only for repeatable options", nil, []string{"TASKD_LISTEN_1=127.0.0.1:1", "TASKD_WORKERS_2=3"}, "",
			[]string{"environment variable TASKD_LISTEN_1", "environment variable TASKD_WORKERS_2"}, ""},
		{"flag with a newline, quoted", []string{"-a\nb=1"}, nil, "", []string{`unknown option "a\nb" (command-line flag "-a\nb")`}, ""},
		{"env with a newline, quoted", nil, []string{"TASKD_\n=1"}, "", []string{`(environment variable "TASKD_\n")`}, ""},
		{"env empty suffix", nil, []string{"TASKD_EXEC_=a=true"}, "", []string{"environment variable TASKD_EXEC_"}, ""},
		{"env suffix without separator", nil, []string{"TASKD_EXECS=a=true"}, "", []string{"environment variable TASKD_EXECS"}, ""},
		{"file", nil, nil, "name = a\n\nfoo = 1\n", []string{`unknown option "foo" (config file `, "line 3"}, "did you mean"},
		{"file suggestion", nil, nil, "lease_ttl = 3s\n", []string{`unknown option "lease_ttl"`, "line 1", "did you mean lease-ttl?"}, ""},
		{"file with dashes", nil, nil, "--listen = :1\n", []string{`unknown option "--listen"`, "did you mean listen?"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			_, err := Load(args, tc.env, io.Discard)
			wantErr(t, err, tc.want...)
			if tc.notWant != "" && err != nil && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q contains %q", err, tc.notWant)
			}
		})
	}
}

// TestEnvSuffixesCollideWithNoOption checks that no option's variable, nor
// one that the exec handler sets, reads as a repeatable option's variable
// with a suffix, so that accepting TASKD_EXEC_<suffix> takes no variable
// away from another option.
func TestEnvSuffixesCollideWithNoOption(t *testing.T) {
	names := make([]string, 0, len(options)+len(ignoredEnv))
	for _, o := range options {
		names = append(names, envName(o.name))
	}
	for k := range ignoredEnv {
		names = append(names, k)
	}
	repeatable := 0
	for _, r := range options {
		if !r.repeatable {
			continue
		}
		repeatable++
		for _, k := range names {
			if strings.HasPrefix(k, envName(r.name)+"_") {
				t.Errorf("%s reads as a further variable of the repeatable option --%s", k, r.name)
			}
		}
		if got := envOption(envName(r.name) + "_X"); got != r {
			t.Errorf("envOption(%s_X) = %v, want --%s", envName(r.name), got, r.name)
		}
	}
	if repeatable < 2 {
		t.Errorf("%d repeatable options, want at least --exec and --webhook", repeatable)
	}
	for _, o := range options {
		if got := envOption(envName(o.name)); got != o {
			t.Errorf("envOption(%s) = %v, want --%s", envName(o.name), got, o.name)
		}
	}
}

func TestIgnoredEnv(t *testing.T) {
	requireValidHostname(t)
	env := []string{
		"TASKD_IDENTITY=bob", "TASKD_TASK_ID=01H", "TASKD_KIND=k", "TASKD_RUN=3",
		"TASKD_FENCE=7:99", "TASKD_NODE=n1", "TASKD_ATTEMPT=2", "PATH=/bin", "TASKD=1", "TASKDX_Y=1",
		// What an exec command's environment holds besides (a taskd started
		// by an exec command once failed on these as unknown options).
		"TASKD_EXIT_RETRY=75", "TASKD_EXIT_PERMANENT=90", "TASKD_EXIT_CANCEL=91", "TASKD_EXIT_SNOOZE=92",
		"TASKD_LEASE_DEADLINE_CS=123456",
	}
	got, err := Load(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Fatalf("got %+v, want defaults", got)
	}
}

func TestRemovedOption(t *testing.T) {
	requireValidHostname(t)
	reasons := map[string]string{
		"run-on-every-node": "removed: scope is stated per task (docs/contract.md §6)",
		"cluster-lock":      "removed: taskd fences every commit with etcd revisions instead of a cluster-wide lock",
	}
	for opt, reason := range reasons {
		tests := []struct {
			name string
			args []string
			env  []string
			file string
			src  string
		}{
			{"flag", []string{"--" + opt}, nil, "", "command-line flag --" + opt},
			{"flag with value", []string{"-" + opt + "=true"}, nil, "", "command-line flag -" + opt},
			{"env", nil, []string{envName(opt) + "=true"}, "", "environment variable " + envName(opt)},
			{"file", nil, nil, "\n" + opt + " = true\n", "line 2"},
		}
		for _, tc := range tests {
			t.Run(opt+"/"+tc.name, func(t *testing.T) {
				args := tc.args
				if tc.file != "" {
					args = append([]string{"--config", writeFile(t, tc.file)}, args...)
				}
				_, err := Load(args, tc.env, io.Discard)
				wantErr(t, err, `option "`+opt+`"`, tc.src, reason)
			})
		}
	}
}

func TestFileFormat(t *testing.T) {
	requireValidHostname(t)
	content := "\ufeff# taskd config\r\n" +
		"\r\n" +
		"   # indented comment\n" +
		"name=node-a\n" +
		"  prefix   =   /p/  \n" +
		"data-dir = \"  /dir with spaces  \"\n" +
		"exec = \"k=echo '#not a comment' x=y\"\n" +
		"etcd = \"\"\n" +
		"log-level = \"WARN\"\n"
	p := writeFile(t, content)
	got, err := Load([]string{"--config", p}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Name = "node-a"
	want.Prefix = "/p/"
	want.DataDir = "  /dir with spaces  "
	want.Exec = []KindTarget{{"k", "echo '#not a comment' x=y"}}
	want.LogLevel = "warn"
	want.ConfigFile = p
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestFileErrors(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"no equals", "# c\nname = a\nlisten\n", []string{"line 3", `want "option = value"`, `"listen"`}},
		{"empty key", "= x\n", []string{"line 1", `want "option = value"`}},
		{"unterminated quote", "\n\nname = \"abc\n", []string{"line 3", "unterminated double quote"}},
		{"lone quote", "name = \"\n", []string{"line 1", "unterminated double quote"}},
		{"duplicate", "name = a\n\n\n\nname = b\n", []string{"line 5", `option "name" is set again (first on line 1)`}},
		{"config inside config", "config = other.conf\n", []string{"line 1", `"config" cannot be set inside a config file`}},
		{"every error reported", "a\nb\n", []string{"line 1", "line 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.content)
			_, err := Load([]string{"--config", p}, nil, io.Discard)
			wantErr(t, err, append([]string{"config file " + p}, tc.want...)...)
		})
	}

	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "absent.conf")
		_, err := Load(nil, []string{"TASKD_CONFIG=" + p}, io.Discard)
		wantErr(t, err, "reading config file", p)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
		}
	})
}

func TestArgSyntax(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"positional", []string{"serve"}, `unexpected argument "serve"`},
		{"positional after flag", []string{"--name", "a", "b"}, `unexpected argument "b"`},
		{"after terminator", []string{"--", "x"}, `unexpected argument "x"`},
		{"lone dash", []string{"-"}, `unexpected argument "-"`},
		{"three dashes", []string{"---name=a"}, "bad flag syntax: ---name=a"},
		{"leading equals", []string{"-=a"}, "bad flag syntax: -=a"},
		{"missing value", []string{"--lease-ttl"}, "option --lease-ttl needs a value"},
		{"bare boolean takes no value", []string{"--replace", "yes"}, `unexpected argument "yes"`},
		{"boolean value", []string{"--replace=maybe"}, `invalid value "maybe" for --replace: not true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.args, nil, io.Discard)
			wantErr(t, err, tc.want)
		})
	}

	t.Run("terminator alone", func(t *testing.T) {
		got, err := Load([]string{"--workers", "3", "--"}, nil, io.Discard)
		if err != nil || got.Workers != 3 {
			t.Fatalf("got Workers %d, %v", got.Workers, err)
		}
	})
	t.Run("value that looks like a flag", func(t *testing.T) {
		got, err := Load([]string{"--exec", "-x=y"}, nil, io.Discard)
		if err != nil || !reflect.DeepEqual(got.Exec, []KindTarget{{"-x", "y"}}) {
			t.Fatalf("got Exec %q, %v", got.Exec, err)
		}
	})
	t.Run("last flag wins", func(t *testing.T) {
		got, err := Load([]string{"--workers", "3", "-workers=4"}, nil, io.Discard)
		if err != nil || got.Workers != 4 {
			t.Fatalf("got Workers %d, %v", got.Workers, err)
		}
	})
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"--h"}, {"--name", "a", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			// Help wins over problems that come later: bad environment,
			// missing file.
			_, err := Load(args, []string{"TASKD_FOO=1", "TASKD_CONFIG=/nonexistent"}, &out)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("Load(%q) error = %v, want flag.ErrHelp", args, err)
			}
			var usage bytes.Buffer
			Usage(&usage)
			if out.String() != usage.String() {
				t.Fatalf("Load wrote %q, want the usage", out.String())
			}
		})
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	text := b.String()
	lines := strings.Split(text, "\n")
	for _, o := range options {
		var line string
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "--"+o.name+" ") {
				line = l
				break
			}
		}
		if line == "" {
			t.Errorf("usage has no line for --%s:\n%s", o.name, text)
			continue
		}
		if !strings.Contains(line, " "+o.def+" ") {
			t.Errorf("usage line for --%s lacks its default %q: %q", o.name, o.def, line)
		}
		if !strings.Contains(line, o.help) {
			t.Errorf("usage line for --%s lacks its meaning %q: %q", o.name, o.help, line)
		}
	}
	for _, want := range []string{"TASKD_LEASE_TTL", "--help", "--run-on-every-node", "--cluster-lock", "docs/contract.md §6"} {
		if !strings.Contains(text, want) {
			t.Errorf("usage lacks %q", want)
		}
	}
	// The contract §9 defaults, as written there.
	for _, want := range []string{"./taskd-data", "http://127.0.0.1:2379", "/taskd/", "127.0.0.1:7420", "127.0.0.1:7421",
		"10s", "500ms", "2500ms", "5000ms", "60s", "30s", "256KiB", "24h"} {
		if !strings.Contains(text, want) {
			t.Errorf("usage lacks default %q", want)
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"lease-ttl", "lease-ttl"},
		{"leasettl", "lease-ttl"},
		{"lease-tll", "lease-ttl"},
		{"worker", "workers"},
		{"hisotry", "history"},
		{"webhooks", "webhook"},
		{"execs", "exec"},
		{"xyzzy", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.in); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
