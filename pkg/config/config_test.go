package config

import (
	"io"
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
