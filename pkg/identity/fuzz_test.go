package identity

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

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
