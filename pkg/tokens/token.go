package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The verbs a token can hold.
const (
	// VerbSchedule: schedule tasks.
	VerbSchedule = "schedule"
	// VerbRead: read tasks, runs, identities, nodes, calendars, events.
	VerbRead = "read"
	// VerbControl: cancel, run now, update, pause and resume tasks and
	// identities.
	VerbControl = "control"
	// VerbAdmin: move identities, drain nodes, calendars, kind pauses,
	// tokens.
	VerbAdmin = "admin"
	// VerbWork: serve kinds as a remote worker (WorkerService).
	VerbWork = "work"
)

// Verbs lists every verb, in the order help texts show them.
var Verbs = []string{VerbSchedule, VerbRead, VerbControl, VerbAdmin, VerbWork}

// Limits of a token (docs/limits.md).
const (
	// MaxDescription bounds a token's description, in bytes.
	MaxDescription = 256
	// MaxScopes bounds a token's identity scopes.
	MaxScopes = 64
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Token is one token a node accepts.
type Token struct {
	ID string
	// Hash is the SHA-256 of the secret.
	Hash [sha256.Size]byte
	// Verbs held by the token.
	Verbs map[string]bool
	// Scopes are exact identities and prefixes ending in "*"; empty: every
	// identity.
	Scopes      []string
	Source      taskdv1.TokenSource
	Description string
	CreatedAt   time.Time
	CreatedBy   string
}

// Allows reports whether the token's scopes cover identity.
func (t *Token) Allows(identity string) bool {
	if len(t.Scopes) == 0 {
		return true
	}
	for _, s := range t.Scopes {
		if p, ok := strings.CutSuffix(s, "*"); ok {
			if strings.HasPrefix(identity, p) {
				return true
			}
		} else if s == identity {
			return true
		}
	}
	return false
}

// Proto returns the token as the API shows it (no secret, no hash).
func (t *Token) Proto() *taskdv1.Token {
	p := &taskdv1.Token{
		Id:          t.ID,
		Identities:  slices.Clone(t.Scopes),
		Description: t.Description,
		Source:      t.Source,
		CreatedBy:   t.CreatedBy,
	}
	for _, v := range Verbs {
		if t.Verbs[v] {
			p.Verbs = append(p.Verbs, v)
		}
	}
	if !t.CreatedAt.IsZero() {
		p.CreatedAt = timestamppb.New(t.CreatedAt)
	}
	return p
}

// ValidateID checks a token id: 1 to 64 letters, digits, _ and -.
func ValidateID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("token id %.64q: want 1 to 64 letters, digits, _ and -", id)
	}
	return nil
}

// ValidateVerbs checks a list of verbs: at least one, each known.
func ValidateVerbs(verbs []string) error {
	if len(verbs) == 0 {
		return fmt.Errorf("no verbs: want at least one of %s", strings.Join(Verbs, ","))
	}
	if len(verbs) > len(Verbs) {
		return fmt.Errorf("%d verbs: there are only %d (%s), each listed once", len(verbs), len(Verbs), strings.Join(Verbs, ","))
	}
	for _, v := range verbs {
		if !slices.Contains(Verbs, v) {
			return fmt.Errorf("unknown verb %.32q: want %s", v, strings.Join(Verbs, ","))
		}
	}
	return nil
}

// ValidateScopes checks identity scopes: each an identity, or a prefix
// ending in "*", with no other "*" and no white space.
func ValidateScopes(scopes []string) error {
	if len(scopes) > MaxScopes {
		return fmt.Errorf("%d identity scopes, the limit is %d", len(scopes), MaxScopes)
	}
	for _, s := range scopes {
		if len(s) > identity.MaxLen+1 {
			return fmt.Errorf("identity scope of %d bytes, the limit is %d (an identity, or a prefix and *)", len(s), identity.MaxLen+1)
		}
		if err := identity.CheckText(s); s != "" && (!utf8.ValidString(s) || err != nil) {
			return fmt.Errorf("bad identity scope %q: not UTF-8 without control characters", s)
		}
		if s == "" || strings.Contains(strings.TrimSuffix(s, "*"), "*") || strings.ContainsAny(s, " \t\n,") {
			return fmt.Errorf("bad identity scope %q: an identity, or a prefix ending in *", s)
		}
	}
	return nil
}

// NewID returns a random token id.
func NewID() string { return "t" + hex.EncodeToString(randomBytes(6)) }

// NewSecret returns a random secret (32 bytes, URL-safe base64).
func NewSecret() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) }

// HashSecret returns the SHA-256 of a secret, as stored.
func HashSecret(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// FileLine returns the tokens-file line that grants a token.
func FileLine(id, secret string, verbs, scopes []string) string {
	sum := HashSecret(secret)
	line := fmt.Sprintf("%s %s %s", id, hex.EncodeToString(sum[:]), strings.Join(verbs, ","))
	if len(scopes) > 0 {
		line += " " + strings.Join(scopes, ",")
	}
	return line
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b
}

func verbSet(verbs []string) map[string]bool {
	m := make(map[string]bool, len(verbs))
	for _, v := range verbs {
		m[v] = true
	}
	return m
}
