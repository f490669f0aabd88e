package keyspace

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// identitySeeds are identities and near-identities that exercise every
// branch of ValidateName, Encode and Decode.
var identitySeeds = []string{
	"", "a", "bob", "bob@example.com", "a/b%2Fc", "%", "%2", "%2F", "%2f", "%zz", "%%",
	"  bob  ", "bob\tx", "\x00", "a\x7f", "a\u0085b", "José Müller", "山田太郎", "🦀🚀",
	"\xff", "\xe5\xb1", "\xed\xa0\x80", strings.Repeat("a", 256), strings.Repeat("a", 257),
	"-_.~:@+=,", "a/b/c", "a b", "/", "%41",
}

// FuzzIdentityEncoding checks the identity encoding on any string: Encode
// is total and Decode undoes it, an encoded identity holds only safe bytes
// (never '/', so it is one key segment), ValidateName never panics, and
// Decode of anything either fails or yields a string whose encoding decodes
// to it again.
func FuzzIdentityEncoding(f *testing.F) {
	for _, s := range identitySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		verr := ValidateName(s)
		if verr == nil && (s == "" || len(s) > MaxNameLen || !utf8.ValidString(s)) {
			t.Fatalf("ValidateName(%q) = nil for an identity out of its limits", s)
		}
		enc := Encode(s)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; !safe(c) && c != '%' {
				t.Fatalf("Encode(%q) = %q holds unsafe byte %q", s, enc, c)
			}
		}
		if strings.Contains(enc, "/") {
			t.Fatalf("Encode(%q) = %q contains '/'", s, enc)
		}
		got, err := Decode(enc)
		switch {
		case verr == nil && (err != nil || got != s):
			t.Fatalf("Decode(Encode(%q)) = %q, %v; want the identity back", s, got, err)
		case verr != nil && err == nil:
			t.Fatalf("Decode(Encode(%q)) = %q for a string that is no identity (%v)", s, got, verr)
		}

		// s read as an encoded key segment, as a key listing does: only a
		// canonical key of a valid identity decodes, so one identity has
		// exactly one key.
		dec, err := Decode(s)
		if err != nil {
			return
		}
		if ValidateName(dec) != nil || Encode(dec) != s {
			t.Fatalf("Decode(%q) = %q: not a valid identity whose key is %q", s, dec, s)
		}
	})
}

// FuzzIdentityPrefixFree checks that one identity's key prefix never covers
// another's: for a != b, Encode(a)+"/" is not a prefix of Encode(b)+"/", so a
// range read of one identity's keys never returns another's.
func FuzzIdentityPrefixFree(f *testing.F) {
	f.Add("a", "ab")
	f.Add("a", "a/b")
	f.Add("a%", "a%25")
	f.Add("a/", "a%2F")
	f.Add("bob", "bob ")
	f.Add("", "x")
	f.Add("山", "山田")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			return
		}
		ea, eb := Encode(a)+"/", Encode(b)+"/"
		if strings.HasPrefix(eb, ea) || strings.HasPrefix(ea, eb) {
			t.Fatalf("identities %q and %q: key prefixes %q and %q overlap", a, b, ea, eb)
		}
		k := New("/p/")
		if k.Mapping(a) == k.Mapping(b) || k.Status(a) == k.Status(b) || k.Owned("n", a) == k.Owned("n", b) {
			t.Fatalf("identities %q and %q share a key", a, b)
		}
	})
}

// FuzzKeysSplit checks key parsing: a task or EVERY_NODE key built from an
// identity and a task id splits back into them, the two kinds of key never
// parse as each other, and any string either fails to split or splits into
// parts whose key splits to the same parts again.
func FuzzKeysSplit(f *testing.F) {
	f.Add("/taskd/", "bob", "01hx0000000000000000000000", "/taskd/task/bob/01hx")
	f.Add("", "a/b%2Fc", "t", "task/a%2Fb%252Fc/t")
	f.Add("/p/", "山田", "x", "/p/every/%E5%B1%B1/x")
	f.Add("/p/", "bob", "x", "/p/task/%zz/x")
	f.Add("/p/", "bob", "x", "/p/task//x")
	f.Add("/p/", "bob", "x", "/p/task/bob/x/y")
	f.Fuzz(func(t *testing.T, prefix, id, taskID, key string) {
		k := New(prefix)
		if ValidateName(id) == nil && taskID != "" && !strings.Contains(taskID, "/") {
			for _, kind := range []struct {
				name      string
				make      func(string, string) string
				split     func(string) (string, string, error)
				splitElse func(string) (string, string, error)
			}{
				{"task", k.Task, k.SplitTask, k.SplitEvery},
				{"every", k.Every, k.SplitEvery, k.SplitTask},
			} {
				key := kind.make(id, taskID)
				gotID, gotTask, err := kind.split(key)
				if err != nil || gotID != id || gotTask != taskID {
					t.Fatalf("%s key %q of (%q, %q) splits to (%q, %q, %v)", kind.name, key, id, taskID, gotID, gotTask, err)
				}
				if _, _, err := kind.splitElse(key); err == nil {
					t.Fatalf("%s key %q also parses as the other kind", kind.name, key)
				}
			}
		}
		for _, split := range []struct {
			name  string
			split func(string) (string, string, error)
			make  func(string, string) string
		}{{"SplitTask", k.SplitTask, k.Task}, {"SplitEvery", k.SplitEvery, k.Every}} {
			gotID, gotTask, err := split.split(key)
			if err != nil {
				if !strings.Contains(err.Error(), "key") && !strings.Contains(err.Error(), "identity") {
					t.Fatalf("%s(%q) error %q names neither the key nor the identity", split.name, key, err)
				}
				continue
			}
			if gotTask == "" || strings.Contains(gotTask, "/") {
				t.Fatalf("%s(%q) = task id %q", split.name, key, gotTask)
			}
			again := split.make(gotID, gotTask)
			if id2, task2, err := split.split(again); err != nil || id2 != gotID || task2 != gotTask {
				t.Fatalf("%s(%q) = (%q, %q) whose key %q splits to (%q, %q, %v)", split.name, key, gotID, gotTask, again, id2, task2, err)
			}
		}
	})
}
