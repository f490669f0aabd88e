package taskcmd

import (
	"strings"
	"testing"
)

func TestTaskID(t *testing.T) {
	for _, tc := range []struct {
		flag    string
		args    []string
		want    string
		wantErr string
	}{
		{"", []string{"t1"}, "t1", ""},
		{"t1", nil, "t1", ""},
		{"t1", []string{"t1"}, "t1", ""},
		{"", nil, "", "missing task id"},
		{"t1", []string{"t2"}, "", "given twice"},
		{"", []string{"t1", "t2"}, "", "unexpected argument"},
	} {
		got, err := taskID(tc.flag, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("taskID(%q, %q) error = %v, want %q", tc.flag, tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("taskID(%q, %q) = %q, %v; want %q", tc.flag, tc.args, got, err, tc.want)
		}
	}
}
