package config

// The setters and checkers of option values that the table in options.go
// shares: each parses or checks one kind of value (a duration, a size, an
// address, a kind list), with the message a refusal names.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// setter stores the value parse reads into the field; a value parse
// refuses is refused with its error.
func setter[T any](field func(*Config) *T, parse func(string) (T, error)) func(*Config, string) error {
	return func(c *Config, v string) error {
		x, err := parse(v)
		if err != nil {
			return err
		}
		*field(c) = x
		return nil
	}
}

// durationSetter stores a time.ParseDuration value into the field.
func durationSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return setter(field, time.ParseDuration)
}

// intSetter stores a decimal integer into the field.
func intSetter(field func(*Config) *int) func(*Config, string) error {
	return setter(field, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			return 0, fmt.Errorf("not a whole number: %w", ne.Err)
		}
		return n, err
	})
}

// boolSetter stores true or false into the field.
func boolSetter(field func(*Config) *bool) func(*Config, string) error {
	return setter(field, func(v string) (bool, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, errors.New("not true or false")
		}
		return b, nil
	})
}

// percentSetter stores a whole percentage, written with its % sign
// ("10%"), into the field.
func percentSetter(field func(*Config) *int) func(*Config, string) error {
	return setter(field, func(v string) (int, error) {
		num, ok := strings.CutSuffix(v, "%")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			return 0, errors.New("not a percentage: want a whole number and %, e.g. 10%")
		}
		return n, nil
	})
}

// kindTargetSetter appends one KIND=TARGET entry to the field.
func kindTargetSetter(field func(*Config) *[]KindTarget, want string) func(*Config, string) error {
	return func(c *Config, v string) error {
		kind, target, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want %s", want)
		}
		*field(c) = append(*field(c), KindTarget{Kind: kind, Target: target})
		return nil
	}
}

// setLimit appends one --limit KIND=N entry; N must be a whole number.
func setLimit(c *Config, v string) error {
	kind, num, ok := strings.Cut(v, "=")
	if !ok {
		return errors.New("want KIND=N")
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return fmt.Errorf("want KIND=N with N a whole number, got %q", num)
	}
	c.Limits = append(c.Limits, KindLimit{Kind: kind, Limit: n})
	return nil
}

// checkLimits checks the --limit entries: valid kinds, each named once,
// limits from 1 to maxWorkers.
func checkLimits(list []KindLimit) error {
	seen := make(map[string]bool, len(list))
	for _, l := range list {
		entry := fmt.Sprintf("%s=%d", l.Kind, l.Limit)
		if err := checkKind(l.Kind); err != nil {
			return fmt.Errorf("entry %q: %w", entry, err)
		}
		if err := checkRange(l.Limit, 1, maxWorkers); err != nil {
			return fmt.Errorf("entry %q: limit %w", entry, err)
		}
		if seen[l.Kind] {
			return fmt.Errorf("kind %q is limited more than once; give one limit per kind", l.Kind)
		}
		seen[l.Kind] = true
	}
	return nil
}

// setKinds reads --kinds: comma-separated kinds, spaces around them
// ignored, empty = none.
func setKinds(c *Config, v string) error {
	c.Kinds = commaList(v)
	return nil
}

// commaList is the comma-separated entries of v, spaces around them
// ignored (nil for none).
func commaList(v string) []string {
	var list []string
	for e := range strings.SplitSeq(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			list = append(list, e)
		}
	}
	return list
}

// checkDeclaredKinds checks the --kinds entries: at most maxDeclaredKinds
// valid kinds, each named once, none with a built-in handler here (exec,
// webhook), since a declared kind is one remote workers serve.
func checkDeclaredKinds(kinds []string, exec, webhook []KindTarget) error {
	if len(kinds) > maxDeclaredKinds {
		return fmt.Errorf("%d kinds: at most %d", len(kinds), maxDeclaredKinds)
	}
	seen := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		if err := checkKind(k); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("kind %q is named more than once", k)
		}
		seen[k] = true
	}
	for _, kt := range append(slices.Clip(exec), webhook...) {
		if seen[kt.Kind] {
			return fmt.Errorf("kind %q has a handler here (--exec or --webhook); --kinds names kinds that remote workers serve", kt.Kind)
		}
	}
	return nil
}

// setEtcd stores a comma-separated endpoint list; an empty value means the
// embedded etcd. Empty entries are kept so that Validate reports them.
func setEtcd(c *Config, v string) error {
	if strings.TrimSpace(v) == "" {
		c.Etcd = nil
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	c.Etcd = parts
	return nil
}

// parseSize parses a byte count: digits, optionally followed by KiB or MiB.
func parseSize(v string) (int, error) {
	num, mult := v, int64(1)
	switch {
	case strings.HasSuffix(v, "KiB"):
		num, mult = strings.TrimSuffix(v, "KiB"), 1<<10
	case strings.HasSuffix(v, "MiB"):
		num, mult = strings.TrimSuffix(v, "MiB"), 1<<20
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, errors.New("want a whole number of bytes, optionally with a KiB or MiB suffix")
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n*mult > math.MaxInt32 {
		return 0, errors.New("size out of range")
	}
	return int(n * mult), nil
}

// checkName checks a node name.
func checkName(name string) error {
	if name == "" {
		return errors.New("must not be empty (the default is the host name)")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%q is %d bytes, more than %d (it is used in etcd keys)", name, len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return fmt.Errorf("%q contains %q; allowed are A-Z a-z 0-9 . _ - (it is used in etcd keys)", name, rune(b))
		}
	}
	return nil
}

// checkPair requires both of two options or neither.
func checkPair(a, b, aName, bName string) error {
	switch {
	case a != "" && b == "":
		return fmt.Errorf("needs %s as well", bName)
	case a == "" && b != "":
		return fmt.Errorf("%s is set without %s; give both or neither", bName, aName)
	}
	return nil
}

// needsTLS reports a TLS CA option set while the server has no
// certificate.
func needsTLS(c Config, v string) error {
	if v != "" && c.TLSCert == "" {
		return errors.New("needs --tls-cert and --tls-key: without them the API is plain text")
	}
	return nil
}

// checkPrefix checks an etcd key prefix.
func checkPrefix(p string) error {
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q must start and end with \"/\"", p)
	}
	if strings.ContainsFunc(p, unicode.IsControl) {
		return fmt.Errorf("%q contains a control character", p)
	}
	return nil
}

// checkPort checks a numeric port 0-65535.
func checkPort(port string) error {
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// checkHostPort checks a host:port listen address.
func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", v, err)
	}
	if err := checkPort(port); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	return nil
}

// checkAdvertise checks an advertised address: empty (use the listener's),
// or a host:port another machine can dial: a host that is not unspecified and
// a port that is not 0.
func checkAdvertise(v string) error {
	if v == "" {
		return nil
	}
	if err := checkHostPort(v); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(v)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%q: the host must be one others can dial, not unspecified", v)
	}
	if port == "0" {
		return fmt.Errorf("%q: the port must not be 0", v)
	}
	return nil
}

// checkListenURL checks the embedded etcd's client URL: http or https,
// host and port, nothing else.
func checkListenURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", v, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http:// or https:// URL", v)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", v)
	}
	if u.Port() == "" {
		return fmt.Errorf("%q has no port", v)
	}
	if err := checkPort(u.Port()); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must be scheme://host:port with no user, path, query or fragment", v)
	}
	return nil
}

// checkEndpoints checks the --etcd endpoints: host:port, or an http, https,
// unix or unixs URL.
func checkEndpoints(eps []string) error {
	for i, e := range eps {
		if e == "" {
			return fmt.Errorf("endpoint %d of %d is empty (a stray comma?)", i+1, len(eps))
		}
		if !strings.Contains(e, "://") {
			if err := checkHostPort(e); err != nil {
				return fmt.Errorf("endpoint %w", err)
			}
			continue
		}
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("endpoint %q is not a URL: %w", e, err)
		}
		switch u.Scheme {
		case "http", "https":
			if u.Hostname() == "" {
				return fmt.Errorf("endpoint %q has no host", e)
			}
			if p := u.Port(); p != "" {
				if err := checkPort(p); err != nil {
					return fmt.Errorf("endpoint %q: %w", e, err)
				}
			}
		case "unix", "unixs":
			if u.Host == "" && u.Path == "" {
				return fmt.Errorf("endpoint %q has no socket path", e)
			}
		default:
			return fmt.Errorf("endpoint %q: scheme must be http, https, unix or unixs", e)
		}
	}
	return nil
}

// checkLeaseTTL checks the node lease TTL.
func checkLeaseTTL(d time.Duration) error {
	switch {
	case d < minLeaseTTL:
		return fmt.Errorf("%v is below %v, etcd's minimum lease TTL with default timings (a shorter TTL would silently become %v)", d, minLeaseTTL, minLeaseTTL)
	case d > maxLeaseTTL:
		return fmt.Errorf("%v is above the maximum of %v", d, maxLeaseTTL)
	case d%time.Second != 0:
		return fmt.Errorf("%v is not a whole number of seconds (etcd lease TTLs are whole seconds)", d)
	}
	return nil
}

// checkPositive requires d > 0.
func checkPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%v must be greater than 0", d)
	}
	return nil
}

// checkNonNegative requires d >= 0.
func checkNonNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%v must not be negative", d)
	}
	return nil
}

// checkDurationRange requires lo <= d <= hi.
func checkDurationRange(d, lo, hi time.Duration) error {
	if d < lo {
		return fmt.Errorf("%v is below the minimum of %v", d, lo)
	}
	if d > hi {
		return fmt.Errorf("%v is above the maximum of %v", d, hi)
	}
	return nil
}

// checkRange requires lo <= n <= hi.
func checkRange(n, lo, hi int) error {
	if n < lo {
		return fmt.Errorf("%d is below the minimum of %d", n, lo)
	}
	if n > hi {
		return fmt.Errorf("%d is above the maximum of %d", n, hi)
	}
	return nil
}

// checkKind checks a handler kind: 1-128 bytes of UTF-8 without whitespace
// or control characters.
func checkKind(kind string) error {
	switch {
	case kind == "":
		return errors.New("empty kind")
	case len(kind) > maxKindLen:
		return fmt.Errorf("kind %q is %d bytes, more than %d", kind, len(kind), maxKindLen)
	case !utf8.ValidString(kind):
		return fmt.Errorf("kind %q is not valid UTF-8", kind)
	case strings.ContainsFunc(kind, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("kind %q contains whitespace or a control character", kind)
	}
	return nil
}

// checkKindTargets checks exec (webhooks false) or webhook (webhooks true)
// entries; other holds the exec entries when checking webhooks, so that a
// kind configured for both is reported.
func checkKindTargets(list, other []KindTarget, webhooks bool) error {
	seen := make(map[string]bool, len(list))
	for _, kt := range list {
		entry := kt.Kind + "=" + kt.Target
		if err := checkKind(kt.Kind); err != nil {
			return fmt.Errorf("entry %q: %w", entry, err)
		}
		if strings.TrimSpace(kt.Target) == "" {
			return fmt.Errorf("entry %q: empty target for kind %q", entry, kt.Kind)
		}
		if webhooks {
			u, err := url.Parse(kt.Target)
			if err != nil {
				return fmt.Errorf("entry %q: kind %q: bad URL: %w", entry, kt.Kind, err)
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("entry %q: kind %q: %q is not an absolute http:// or https:// URL", entry, kt.Kind, kt.Target)
			}
		}
		if seen[kt.Kind] {
			return fmt.Errorf("kind %q is configured more than once; a kind has one handler", kt.Kind)
		}
		seen[kt.Kind] = true
	}
	for _, kt := range other {
		if seen[kt.Kind] {
			return fmt.Errorf("kind %q is configured by both --exec and --webhook; a kind has one handler", kt.Kind)
		}
	}
	return nil
}
