package ticket

import (
	"bytes"
	"testing"
	"time"
)

// FuzzOpen opens arbitrary bytes, as sent (almost all fail the signature) and as the payload of
// a well-signed ticket of every kind. Errors are fine; panics are not, nothing opens as another
// kind, and what decodes seals again to a ticket that decodes the same.
func FuzzOpen(f *testing.F) {
	k := NewKeyring([]byte("fuzz secret"), []byte("previous fuzz secret"))
	for _, p := range samples {
		raw, err := k.Seal(time.Now().Add(time.Hour), p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[overhead-macLen : len(raw)-macLen])
	}
	f.Add([]byte{})
	f.Add([]byte(`{"sql":"x","pins":{"a":"b"}}`))
	f.Add(bytes.Repeat([]byte("["), 1000))
	f.Fuzz(func(t *testing.T, raw []byte) {
		now := time.Now()
		_, _ = k.Open(raw, now)
		for _, sample := range samples {
			kind := sample.TicketKind()
			o, err := k.Open(k.SealRaw(kind, kind.Version(), now.Add(time.Hour), raw), now)
			if err != nil {
				t.Fatalf("a well-signed %s ticket did not open: %v", kind, err)
			}
			p, err := decodeAs(sample, o)
			if err != nil {
				continue
			}
			again, err := k.Seal(o.Expires, p)
			if err != nil {
				t.Fatalf("a decoded %s payload does not seal: %v", kind, err)
			}
			o2, err := k.Open(again, now)
			if err != nil {
				t.Fatal(err)
			}
			if p2, err := decodeAs(sample, o2); err != nil || !equalJSON(p, p2) {
				t.Fatalf("%s payload %q changed through a second seal: %+v, then %+v (%v)", kind, raw, p, p2, err)
			}
		}
	})
}

// equalJSON compares two payloads by their encoding (nil and empty slices alike decode from
// the same bytes differently only where the struct says so).
func equalJSON(a, b Payload) bool {
	k := NewKeyring([]byte("x"), nil)
	ra, err1 := k.Seal(time.Unix(0, 0), a)
	rb, err2 := k.Seal(time.Unix(0, 0), b)
	return err1 == nil && err2 == nil && bytes.Equal(ra, rb)
}
