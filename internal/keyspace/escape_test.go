package keyspace

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		s    string
		ok   bool
	}{
		{"empty", "", false},
		{"one byte", "a", true},
		{"ordinary", "bob", true},
		{"email-like", "bob@example.com", true},
		{"slash and percent", "a/b%2Fc", true},
		{"spaces", "  bob  ", true},
		{"tab", "bob\tx", false},
		{"newline", "bob\n", false},
		{"NUL", "\x00", false},
		{"NUL inside", "bo\x00b", false},
		{"unit separator 0x1f", "a\x1fb", false},
		{"space 0x20 is fine", "\x20", true},
		{"tilde 0x7e is fine", "~", true},
		{"DEL 0x7f", "a\x7f", false},
		{"C1 NEL U+0085", "a\u0085b", false},
		{"C1 U+0080", "\u0080", false},
		{"C1 U+009F", "\u009f", false},
		{"NBSP U+00A0 is fine", "\u00a0", true},
		{"latin", "José Müller", true},
		{"CJK", "山田太郎", true},
		{"emoji", "🦀🚀", true},
		{"RTL", "مرحبا", true},
		{"U+FFFD itself is fine", "\ufffd", true},
		{"invalid UTF-8 lone continuation", "a\x80b", false},
		{"invalid UTF-8 0xff", "\xff", false},
		{"invalid UTF-8 truncated rune", "\xe5\xb1", false},
		{"invalid UTF-8 overlong", "\xc0\xaf", false},
		{"invalid UTF-8 surrogate", "\xed\xa0\x80", false},
		{"256 bytes", strings.Repeat("a", 256), true},
		{"257 bytes", strings.Repeat("a", 257), false},
		{"256 bytes of 4-byte runes", strings.Repeat("🦀", 64), true},
		{"257 bytes ending mid-rune budget", strings.Repeat("🦀", 64) + "a", false},
		{"1000 bytes", strings.Repeat("x", 1000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.s)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tt.s, err, tt.ok)
			}
		})
	}
	if err := ValidateName(strings.Repeat("a", 257)); err == nil || !strings.Contains(err.Error(), "257") {
		t.Fatalf("length error %v does not name the length", err)
	}
}

// TestValidateNameEveryControl checks every C0 and C1 control rune and DEL
// alone, at the start and at the end.
func TestValidateNameEveryControl(t *testing.T) {
	for r := rune(0); r < 0xa0; r++ {
		ctrl := r < 0x20 || r >= 0x7f
		for _, s := range []string{string(r), string(r) + "x", "x" + string(r)} {
			if err := ValidateName(s); (err != nil) != ctrl {
				t.Fatalf("ValidateName(%q) = %v, control=%v", s, err, ctrl)
			}
		}
	}
}

var roundTrip = []string{
	"",
	"bob",
	"bob.x",
	"bob/x",
	"bob%2Fx",
	"bob%",
	"%",
	"%%",
	"%2",
	"%zz",
	"/",
	"//",
	"/bob/",
	".",
	"..",
	"../..",
	" ",
	"bob ",
	" bob",
	"a b c",
	"a+b=c,d:e@f~g_h-i",
	"José",
	"山田/太郎",
	"🦀",
	"\x00\x01\x7f",
	"\xff\xfe", // Encode works on bytes, even invalid UTF-8
	"UPPER lower 0123456789",
	"tab\there",
	"new\nline",
	"quote\"'`",
	"back\\slash",
	"question?hash#amp&",
	strings.Repeat("/", 256),
	strings.Repeat("%", 256),
	strings.Repeat("z", 256),
}

// A valid identity comes back from its key; the key of a string that is no
// identity (empty, control characters, invalid UTF-8) is refused, since
// Encode also escapes things that are not identities (idempotency keys).
func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, s := range roundTrip {
		enc := Encode(s)
		if strings.ContainsRune(enc, '/') {
			t.Errorf("Encode(%q) = %q contains '/'", s, enc)
		}
		dec, err := Decode(enc)
		if ValidateName(s) != nil {
			if err == nil {
				t.Errorf("Decode(Encode(%q)) = %q, nil; want an error for a string that is no identity", s, dec)
			}
			continue
		}
		if err != nil || dec != s {
			t.Errorf("Decode(Encode(%q)) = %q, %v", s, dec, err)
		}
	}
}

// TestEncodeDecode: each string encodes to its key part, which decodes
// back to it when the string is a valid identity (else Decode refuses it).
func TestEncodeDecode(t *testing.T) {
	// Not identities: Decode refuses their key parts.
	notIdentity := map[string]bool{"\x00": true, "\xff": true}
	tests := []struct{ plain, encoded string }{
		{"bob", "bob"},
		{"bob.x", "bob.x"},
		{"bob/x", "bob%2Fx"},
		{"bob%2Fx", "bob%252Fx"},
		{"bob ", "bob%20"},
		{"a-b_c.d~e:f@g+h=i,j", "a-b_c.d~e:f@g+h=i,j"},
		{"é", "%C3%A9"},
		{"\x00", "%00"},
		{"\xff", "%FF"},
		{"?#&*", "%3F%23%26%2A"},
		{"%", "%25"},
		{"a b", "a%20b"},
	}
	for _, tt := range tests {
		if got := Encode(tt.plain); got != tt.encoded {
			t.Errorf("Encode(%q) = %q, want %q", tt.plain, got, tt.encoded)
		}
		got, err := Decode(tt.encoded)
		if notIdentity[tt.plain] && err == nil {
			t.Errorf("Decode(%q) = %q, nil; want an error", tt.encoded, got)
		}
		if !notIdentity[tt.plain] && (err != nil || got != tt.plain) {
			t.Errorf("Decode(%q) = %q, %v; want %q", tt.encoded, got, err, tt.plain)
		}
	}
}

// TestEncodeInjective: distinct identities, including ones that look like
// each other's escapes, encode differently.
func TestEncodeInjective(t *testing.T) {
	seen := map[string]string{}
	for _, s := range roundTrip {
		enc := Encode(s)
		if prev, dup := seen[enc]; dup {
			t.Fatalf("Encode(%q) = Encode(%q) = %q", s, prev, enc)
		}
		seen[enc] = s
	}
}

// TestNoPrefixCollision: the key segment of one identity, with its
// separator, is never a prefix of another's (contract §1: "bob" must never
// match "bob.x" or "bob/x").
func TestNoPrefixCollision(t *testing.T) {
	a := "bob"
	for _, b := range []string{"bob.x", "bob/x", "bob%2Fx", "bo", "bob ", "bob/", "bob%", "bobx", "bob\x00", "bob/bob"} {
		ea, eb := Encode(a)+"/", Encode(b)+"/"
		if strings.HasPrefix(eb, ea) {
			t.Errorf("Encode(%q)+\"/\" = %q is a prefix of Encode(%q)+\"/\" = %q", a, ea, b, eb)
		}
		if strings.HasPrefix(ea, eb) {
			t.Errorf("Encode(%q)+\"/\" = %q is a prefix of Encode(%q)+\"/\" = %q", b, eb, a, ea)
		}
	}
	// And among all pairs of the round-trip set.
	for _, x := range roundTrip {
		for _, y := range roundTrip {
			if x != y && strings.HasPrefix(Encode(y)+"/", Encode(x)+"/") {
				t.Errorf("prefix collision between %q and %q", x, y)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, s := range []string{
		"%",
		"%2",
		"bob%",
		"bob%2",
		"bob%2Fx%",
		"%G0",
		"%0G",
		"%zz",
		"% 2",
		"%-1",
		"bob%%2F",
		"%2F%",
		"",        // no identity
		"bob%2fx", // lower-case hex: Encode writes upper case
		"%41%42",  // safe bytes are never escaped
		"%00",     // a control character is no identity
		"bob x",   // a space is always escaped
		"%FF",     // invalid UTF-8
	} {
		if got, err := Decode(s); err == nil {
			t.Errorf("Decode(%q) = %q, nil; want an error", s, got)
		}
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range roundTrip {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := Encode(s)
		if strings.ContainsRune(enc, '/') {
			t.Fatalf("Encode(%q) = %q contains '/'", s, enc)
		}
		if !utf8.ValidString(enc) {
			t.Fatalf("Encode(%q) = %q is not valid UTF-8", s, enc)
		}
		dec, err := Decode(enc)
		if ValidateName(s) != nil {
			if err == nil {
				t.Fatalf("Decode(Encode(%q)) = %q, nil for a string that is no identity", s, dec)
			}
		} else if err != nil || dec != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", s, dec, err)
		}
		// Prefix freedom against a few neighbours of s.
		for _, other := range []string{s + "x", s + "/", s + ".x", s + "/x", s + " ", s + "%"} {
			if strings.HasPrefix(Encode(other)+"/", enc+"/") {
				t.Fatalf("Encode(%q)+\"/\" is a prefix of Encode(%q)+\"/\"", s, other)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"safe", "user-1234@example.com"},
		{"escapes", "tenant/42/user 7%"},
		{"unicode", "山田太郎🦀"},
		{"max", strings.Repeat("a/", 128)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				_ = Encode(bc.s)
			}
		})
	}
}
