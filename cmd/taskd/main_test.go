package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHelpAndBadOptions(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, opt := range []string{"--lease-ttl", "--handoff-period", "--exec", "--webhook", "--misfire-threshold", "--version", "--pprof", "--log-format", "--log-summary"} {
		if !strings.Contains(out.String(), opt) {
			t.Errorf("help does not list %s", opt)
		}
	}
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--no-such-option"}, nil, "no-such-option"},
		{[]string{"--cluster-lock=true"}, nil, "removed"},
		{nil, []string{"TASKD_BOGUS=1"}, "TASKD_BOGUS"},
		{[]string{"--workers", "0"}, nil, "workers"},
	} {
		out.Reset()
		errOut.Reset()
		code := run(context.Background(), c.args, c.env, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit %d, stderr %q: want 2 naming %q", c.args, c.env, code, errOut.String(), c.want)
		}
	}
}
