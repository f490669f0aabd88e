package config

// Reading the three sources of settings (command line, environment, config
// file) into settings that Load applies in order; each refuses an unknown
// or removed option with its name.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// parseArgs parses command-line flags as Go's flag package does: -name or
// --name, with the value after '=' or in the next argument; "--" ends the
// flags. taskd takes no positional arguments.
func parseArgs(args []string, out io.Writer) ([]setting, error) {
	var settings []setting
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return nil, fmt.Errorf("unexpected argument %q: taskd takes only options (see --help)", args[i+1])
			}
			break
		}
		if len(a) < 2 || a[0] != '-' {
			return nil, fmt.Errorf("unexpected argument %q: taskd takes only options (see --help)", a)
		}
		body := a[1:]
		if body[0] == '-' {
			body = body[1:]
		}
		if body == "" || body[0] == '-' || body[0] == '=' {
			return nil, fmt.Errorf("bad flag syntax: %s", printable(a))
		}
		name, value, hasValue := strings.Cut(body, "=")
		if name == "h" || name == "help" {
			Usage(out)
			return nil, fmt.Errorf("%s: %w", a, flag.ErrHelp)
		}
		src := source{kind: fromFlag, key: a[:len(a)-len(body)] + name}
		opt := optionsByName[name]
		if opt == nil {
			return nil, unknownOption(name, src)
		}
		if !hasValue && opt.boolean {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("option %s needs a value", printable(src.key))
			}
			i++
			value = args[i]
		}
		settings = append(settings, setting{opt: opt, value: value, src: src})
	}
	return settings, nil
}

// parseEnv reads the TASKD_* variables of environ, in sorted order; when a
// variable appears twice the last one counts. A variable holds exactly one
// value, never split: a repeatable option takes one entry from its own
// variable (TASKD_EXEC) and one from each further variable named after it
// with a suffix (TASKD_EXEC_1, TASKD_EXEC_mail, ...), in the variables'
// sorted order. An empty variable adds no entry but still replaces the
// entries of the config file.
func parseEnv(environ []string) ([]setting, error) {
	vals := make(map[string]string)
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, envPrefix) || ignoredEnv[k] {
			continue
		}
		vals[k] = v
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	var settings []setting
	var errs []error
	for _, k := range keys {
		src := source{kind: fromEnv, key: k}
		opt := envOption(k)
		if opt == nil {
			errs = append(errs, unknownOption(strings.ToLower(strings.ReplaceAll(k[len(envPrefix):], "_", "-")), src))
			continue
		}
		if !opt.repeatable {
			settings = append(settings, setting{opt: opt, value: vals[k], src: src})
			continue
		}
		entry := strings.TrimSpace(vals[k])
		settings = append(settings, setting{opt: opt, value: entry, src: src, clear: entry == ""})
	}
	return settings, errors.Join(errs...)
}

// envOption returns the option that the environment variable k sets, or nil:
// the option whose variable k is, or the repeatable option whose variable
// followed by '_' and at least one more character k is. No option's variable
// has that form (TestEnvSuffixesCollideWithNoOption), so the two readings
// never compete.
func envOption(k string) *option {
	name := strings.ToLower(strings.ReplaceAll(k[len(envPrefix):], "_", "-"))
	if opt := optionsByName[name]; opt != nil && envName(opt.name) == k {
		return opt
	}
	for _, opt := range options {
		if base := envName(opt.name) + "_"; opt.repeatable && len(k) > len(base) && strings.HasPrefix(k, base) {
			return opt
		}
	}
	return nil
}

// parseFile reads a config file: one "option = value" per line, '#' comment
// lines and blank lines ignored, a value optionally wrapped in double quotes
// (taken verbatim between them). A repeatable option is repeated on several
// lines; any other option may appear once.
func parseFile(path string) ([]setting, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	var settings []setting
	var errs []error
	first := make(map[string]int)
	for i, line := range strings.Split(text, "\n") {
		src := source{kind: fromFile, file: path, line: i + 1}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			errs = append(errs, fmt.Errorf("%s: want \"option = value\", got %q", src, line))
			continue
		}
		opt := optionsByName[key]
		if opt == nil {
			errs = append(errs, unknownOption(key, src))
			continue
		}
		if opt.name == configOptName {
			errs = append(errs, fmt.Errorf("%s: option %q cannot be set inside a config file", src, key))
			continue
		}
		if len(value) > 0 && value[0] == '"' {
			if len(value) < 2 || value[len(value)-1] != '"' {
				errs = append(errs, fmt.Errorf("%s: value of %q: unterminated double quote", src, key))
				continue
			}
			value = value[1 : len(value)-1]
		}
		if !opt.repeatable {
			if prev, dup := first[key]; dup {
				errs = append(errs, fmt.Errorf("%s: option %q is set again (first on line %d)", src, key, prev))
				continue
			}
			first[key] = src.line
		}
		settings = append(settings, setting{opt: opt, value: value, src: src})
	}
	return settings, errors.Join(errs...)
}
