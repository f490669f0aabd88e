package cmdline

import (
	"flag"
	"io"
	"os"
	"slices"
	"strings"
)

// NewFlagSet makes a silent FlagSet: taskctl prints errors and usage
// itself.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseInterspersed parses fs from args allowing flags after positional
// arguments: the flag package stops at the first positional argument, so
// the remainder is parsed again until nothing is left. Everything after a
// "--" terminator is positional. It returns the positional arguments in
// order.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if endedByTerminator(fs, args[:len(args)-len(rest)]) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// endedByTerminator reports whether the flag package stopped parsing
// consumed (the arguments it used up) at a "--" terminator, as opposed to a
// "--" that was the value of a flag. It walks consumed the way the flag
// package does.
func endedByTerminator(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		s := consumed[i]
		if s == "--" {
			return i == len(consumed)-1
		}
		name := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the flag's value
	}
	return false
}

// StringList is a repeatable string flag.
type StringList []string

// String returns the values joined by commas.
func (l *StringList) String() string { return strings.Join(*l, ",") }

// Set appends one value.
func (l *StringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// FlagGiven reports whether the flag called name was set on the command
// line.
func FlagGiven(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// OtherFlag returns the first flag set on the command line that is not one
// of allowed, or "".
func OtherFlag(fs *flag.FlagSet, allowed ...string) string {
	other := ""
	fs.Visit(func(f *flag.Flag) {
		if other == "" && !slices.Contains(allowed, f.Name) {
			other = f.Name
		}
	})
	return other
}

// FileGiven reports whether -f FILE (or --file) was given to a command
// whose file holds its whole input, so that no other flag but allowed
// (and -o) may be given with it; file is the flag's value, holds what the
// file holds, for the error. A -f with an empty name is an error.
func FileGiven(fs *flag.FlagSet, file, holds string, allowed ...string) (bool, error) {
	if file == "" && !FlagGiven(fs, "f") && !FlagGiven(fs, "file") {
		return false, nil
	}
	if file == "" {
		return true, Usagef("invalid value \"\" for flag -f: want a file name, or - for stdin")
	}
	if other := OtherFlag(fs, append([]string{"f", "file", "o", "output"}, allowed...)...); other != "" {
		return true, Usagef("--%s cannot be combined with -f: the file holds %s", other, holds)
	}
	return true, nil
}

// ReadFile reads the file a -f flag names ("-": stdin); an error is a
// UsageError naming the flag.
func ReadFile(stdin io.Reader, path string) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, Usagef("invalid value %q for flag -f: %v", path, err)
	}
	return b, nil
}

// ParseEnum maps a flag value to the number of a proto enum's value (values
// is the enum's name map, such as taskdv1.TaskState_value): its name
// (dead, NEXT_SCHEDULED, next-scheduled) in any case, with - or _, with or
// without prefix. ok is false for an unknown name and for the unspecified
// value (number 0).
func ParseEnum(v, prefix string, values map[string]int32) (n int32, ok bool) {
	s := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "_")
	s = strings.TrimPrefix(s, prefix)
	n, ok = values[prefix+s]
	return n, ok && n != 0
}
