package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"regexp"
	"strings"
)

// envToken names the environment variable that holds the bearer token.
const envToken = "TASKCTL_TOKEN"

// bearer sends "authorization: Bearer ID.SECRET" with every RPC.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false so that a token also works on plain
// text; docs/security.md says to use TLS wherever the network is not
// trusted.
func (bearer) RequireTransportSecurity() bool { return false }

var (
	tokenIDRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	knownVerbs = []string{"schedule", "read", "control", "admin"}
)

// defineTokenCreate defines "token create": it makes a token locally and
// prints the token once, and the line that grants it in a node's
// --tokens-file (which holds only the secret's SHA-256).
func defineTokenCreate(fs *flag.FlagSet) action {
	id := fs.String("id", "", "`ID` of the token (letters, digits, _ and -); default a random one")
	verbs := fs.String("verbs", "", "comma-separated `VERBS` among schedule, read, control, admin (required)")
	identities := fs.String("identities", "", "comma-separated identities and prefixes ending in * (`SCOPES`); empty: all identities")
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *verbs == "" {
			return usagef("--verbs is required")
		}
		for _, v := range strings.Split(*verbs, ",") {
			if !contains(knownVerbs, v) {
				return usagef("unknown verb %q: want %s", v, strings.Join(knownVerbs, ","))
			}
		}
		if *identities != "" {
			for _, s := range strings.Split(*identities, ",") {
				if s == "" || strings.Contains(strings.TrimSuffix(s, "*"), "*") || strings.ContainsAny(s, " \t") {
					return usagef("bad identity scope %q: an identity, or a prefix ending in *", s)
				}
			}
		}
		tid := *id
		if tid == "" {
			tid = "t" + hex.EncodeToString(randomBytes(6))
		}
		if !tokenIDRE.MatchString(tid) {
			return usagef("bad --id %q: letters, digits, _ and - only", tid)
		}
		secret := base64.RawURLEncoding.EncodeToString(randomBytes(32))
		sum := sha256.Sum256([]byte(secret))
		line := fmt.Sprintf("%s %s %s", tid, hex.EncodeToString(sum[:]), *verbs)
		if *identities != "" {
			line += " " + *identities
		}
		fmt.Fprintf(e.stdout, "token: %s.%s\n", tid, secret)
		fmt.Fprintf(e.stdout, "tokens-file line: %s\n", line)
		fmt.Fprintln(e.stderr, "taskctl: the token is shown only now; add the line to each node's --tokens-file and send the nodes SIGHUP")
		return nil
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
