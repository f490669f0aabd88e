package cmdline

import (
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		identity string
		all      bool
		pos      []string
	}{
		{"flags first", []string{"--identity", "a", "t1"}, "a", false, []string{"t1"}},
		{"flags last", []string{"t1", "--identity", "a", "--all"}, "a", true, []string{"t1"}},
		{"mixed", []string{"t1", "-identity=a", "t2", "-all", "t3"}, "a", true, []string{"t1", "t2", "t3"}},
		{"terminator", []string{"--identity", "a", "--", "--all", "t1"}, "a", false, []string{"--all", "t1"}},
		{"terminator after positional", []string{"t1", "--", "-x"}, "", false, []string{"t1", "-x"}},
		{"dashes as a value", []string{"--identity", "--", "t1", "--all"}, "--", true, []string{"t1"}},
		{"dashes as a value then terminator", []string{"--identity", "--", "--", "--all"}, "--", false, []string{"--all"}},
		{"bool then terminator", []string{"--all", "--", "--identity"}, "", true, []string{"--identity"}},
		{"none", nil, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFlagSet("test")
			identity := fs.String("identity", "", "")
			all := fs.Bool("all", false, "")
			pos, err := ParseInterspersed(fs, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if *identity != tc.identity || *all != tc.all || !slices.Equal(pos, tc.pos) {
				t.Errorf("identity %q, all %v, args %q; want %q, %v, %q", *identity, *all, pos, tc.identity, tc.all, tc.pos)
			}
		})
	}
}
