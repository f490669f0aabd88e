package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/taskd/taskd/internal/cli/command"
)

func TestCalendarCreateFileName(t *testing.T) {
	addr := freeAddr(t) // an accidental RPC would fail with exit 1, not 2
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"other", "-f", "-"}, `{"name": "weekend", "weekly": {"days": ["SAT"]}}`, `calendar name given twice: "other" and "weekend"`},
		{[]string{"-f", "-"}, `{"weekly": {"days": ["SAT"]}}`, "missing calendar NAME: the -f file has no name"},
		{[]string{"-f", "-", "--tz", "UTC"}, `{"name": "weekend", "weekly": {"days": ["SAT"]}}`, "--tz cannot be combined with -f"},
		{[]string{"--file="}, ``, "flag -f"},
	} {
		var out, errOut bytes.Buffer
		code := runEnv(append([]string{"--addr", addr, "calendar", "create"}, tc.args...), &command.Env{Stdin: strings.NewReader(tc.stdin), Stdout: &out, Stderr: &errOut})
		if code != exitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("calendar create %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
}
