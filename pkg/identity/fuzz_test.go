package identity

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// identitySeeds are identities and near-identities that exercise every
// branch of Validate, Encode and Decode.
var identitySeeds = []string{
	"", "a", "bob", "bob@example.com", "a/b%2Fc", "%", "%2", "%2F", "%2f", "%zz", "%%",
	"  bob  ", "bob\tx", "\x00", "a\x7f", "a\u0085b", "José Müller", "山田太郎", "🦀🚀",
	"\xff", "\xe5\xb1", "\xed\xa0\x80", strings.Repeat("a", 256), strings.Repeat("a", 257),
	"-_.~:@+=,", "a/b/c", "a b", "/", "%41",
}

// FuzzIdentityEncoding checks the identity encoding on any string: Encode
// is total and Decode undoes it, an encoded identity holds only safe bytes
// (never '/', so it is one key segment), Validate never panics, and Decode
// of anything either fails or yields a string whose encoding decodes to it
// again.
func FuzzIdentityEncoding(f *testing.F) {
	for _, s := range identitySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		verr := Validate(s)
		if verr == nil && (s == "" || len(s) > MaxLen || !utf8.ValidString(s)) {
			t.Fatalf("Validate(%q) = nil for an identity out of its limits", s)
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
		if Validate(dec) != nil || Encode(dec) != s {
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
		k := NewKeys("/p/")
		if k.Mapping(a) == k.Mapping(b) || k.Status(a) == k.Status(b) || k.Owned("n", a) == k.Owned("n", b) {
			t.Fatalf("identities %q and %q share a key", a, b)
		}
	})
}

// FuzzDecodeOwner feeds arbitrary bytes as a mapping record: decoding
// fails with an error naming the identity, or yields an owner whose record
// re-encodes to the same owner.
func FuzzDecodeOwner(f *testing.F) {
	for _, m := range []*storev1.Mapping{
		{}, {Node: "node-a", Incarnation: "01HX"}, {Node: strings.Repeat("n", 64)},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(7))
	}
	f.Add([]byte{0xff}, int64(1))
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe}, int64(1)) // node: invalid UTF-8
	f.Fuzz(func(t *testing.T, value []byte, rev int64) {
		o, err := decodeOwner("bob", value, rev)
		if err != nil {
			if !strings.Contains(err.Error(), `"bob"`) {
				t.Fatalf("error %q does not name the identity", err)
			}
			return
		}
		if !o.Mapped || o.Identity != "bob" || o.Epoch != rev ||
			!utf8.ValidString(o.Node) || !utf8.ValidString(o.Incarnation) {
			t.Fatalf("decodeOwner = %+v", o)
		}
		b, err := proto.Marshal(&storev1.Mapping{Node: o.Node, Incarnation: o.Incarnation})
		if err != nil {
			t.Fatalf("re-encode %+v: %v", o, err)
		}
		if o2, err := decodeOwner("bob", b, rev); err != nil || o2 != o {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", o, o2, err)
		}
	})
}
