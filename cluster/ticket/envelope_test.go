package ticket

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// One payload type per kind, as the packages that issue tickets declare them.
type (
	statementP struct {
		SQL  string            `json:"sql"`
		Pins map[string]string `json:"pins,omitempty"`
	}
	emptyP    struct{}
	trainingP struct {
		Dataset  string  `json:"dataset"`
		PartRows []int64 `json:"part_rows"`
		Seed     uint64  `json:"seed"`
	}
	partitionP struct {
		Dataset string `json:"dataset"`
		Columns []int  `json:"columns"`
	}
	shuffleP struct {
		Bucket int `json:"bucket"`
	}
	actionP struct {
		Type string `json:"type"`
		Body []byte `json:"body"`
	}
	tokenP struct {
		User string `json:"user"`
	}
)

func (statementP) TicketKind() Kind { return Statement }
func (emptyP) TicketKind() Kind     { return Empty }
func (trainingP) TicketKind() Kind  { return Training }
func (partitionP) TicketKind() Kind { return Partition }
func (shuffleP) TicketKind() Kind   { return Shuffle }
func (actionP) TicketKind() Kind    { return Action }
func (tokenP) TicketKind() Kind     { return Token }

// samples has one payload of every kind.
var samples = []Payload{
	statementP{SQL: "SELECT 'ünïcødé', x FROM t WHERE y = '\x00'", Pins: map[string]string{"lake.ns.t": "@42"}},
	emptyP{},
	trainingP{Dataset: "feats", PartRows: []int64{10, 0, 1 << 62}, Seed: 1<<64 - 1},
	partitionP{Dataset: "feats", Columns: []int{3, 0}},
	shuffleP{Bucket: 7},
	actionP{Type: "cachedb.heartbeat", Body: []byte(`{"id":"n1"}`)},
	tokenP{User: "alice"},
}

var now = time.Unix(1_700_000_000, 123)

func testKeys() *Keyring { return NewKeyring([]byte("cluster secret"), nil) }

// decodeAs decodes o as the payload type of sample.
func decodeAs(sample Payload, o Opened) (Payload, error) {
	switch sample.(type) {
	case statementP:
		return Decode[statementP](o)
	case emptyP:
		return Decode[emptyP](o)
	case trainingP:
		return Decode[trainingP](o)
	case partitionP:
		return Decode[partitionP](o)
	case shuffleP:
		return Decode[shuffleP](o)
	case actionP:
		return Decode[actionP](o)
	case tokenP:
		return Decode[tokenP](o)
	}
	panic("no payload type for " + sample.TicketKind().String())
}

func TestEveryKindRoundTrips(t *testing.T) {
	k := testKeys()
	if len(samples) != len(kinds) {
		t.Fatalf("%d samples for %d kinds: give every kind one", len(samples), len(kinds))
	}
	for _, want := range samples {
		t.Run(want.TicketKind().String(), func(t *testing.T) {
			expires := now.Add(time.Minute)
			raw, err := k.Seal(expires, want)
			if err != nil {
				t.Fatal(err)
			}
			if kind, ok := KindOf(raw); !ok || kind != want.TicketKind() {
				t.Errorf("KindOf = %v, %v", kind, ok)
			}
			o, err := k.Open(raw, now)
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != want.TicketKind() || !o.Expires.Equal(expires) {
				t.Errorf("opened %v expiring %v, want %v expiring %v", o.Kind, o.Expires, want.TicketKind(), expires)
			}
			got, err := decodeAs(want, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip = %#v, want %#v", got, want)
			}
		})
	}
	// OpenAs is Open and Decode at once.
	got, exp, err := OpenAs[partitionP](k, mustSeal(t, k, now.Add(time.Hour), samples[3]), now)
	if err != nil || !reflect.DeepEqual(got, samples[3]) || !exp.Equal(now.Add(time.Hour)) {
		t.Errorf("OpenAs = %+v, %v, %v", got, exp, err)
	}
}

// A ticket of one kind is refused as every other kind, though its signature is good.
func TestKindNeverOpensAsAnother(t *testing.T) {
	k := testKeys()
	for _, issued := range samples {
		raw := mustSeal(t, k, now.Add(time.Minute), issued)
		o, err := k.Open(raw, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, asked := range samples {
			if asked.TicketKind() == issued.TicketKind() {
				continue
			}
			_, err := decodeAs(asked, o)
			wantInvalid(t, err, issued.TicketKind().article()+" ticket is not "+asked.TicketKind().article()+" ticket")
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	k := testKeys()
	good := mustSeal(t, k, now.Add(time.Minute), samples[0])
	other := NewKeyring([]byte("another cluster"), nil)
	altered := bytes.Clone(good)
	altered[headerLen+3] ^= 0x20 // a letter of the SQL text
	expiry := now.Add(-time.Second)
	tests := []struct {
		name string
		keys *Keyring
		raw  []byte
		want string
	}{
		{"empty", k, nil, "ticket is malformed: it is not a cachedb ticket"},
		{"garbage", k, []byte("not a ticket at all, just some bytes that are long enough to be one"), "ticket is malformed"},
		{"a Flight SQL ticket", k, append([]byte("\n\x3atype.googleapis.com/arrow.flight.protocol.sql.TicketStatementQuery"), good...), "ticket is malformed"},
		{"too short", k, good[:overhead-1], "ticket is malformed"},
		{"truncated", k, good[:len(good)-1], "its signature does not match"},
		{"altered", k, altered, "its signature does not match"},
		{"another secret", k, mustSeal(t, other, now.Add(time.Minute), samples[0]),
			"not issued by this cluster's head: it is signed with key " + other.Current().String() + " and this process holds " + k.Current().String()},
		{"no secret here", nil, good, "this process has no cluster secret"},
		{"unknown kind", k, k.SealRaw(99, 1, now.Add(time.Minute), []byte("{}")), "ticket is of unknown kind 99"},
		{"unknown version", k, k.SealRaw(Partition, 2, now.Add(time.Minute), []byte("{}")), "partition ticket has version 2 and this process reads version 1"},
		{"expired", k, mustSeal(t, k, expiry, samples[0]), "statement ticket expired at " + expiry.UTC().Format(time.RFC3339)},
		{"without expiry", k, mustSeal(t, k, time.Time{}, samples[0]), "statement ticket expired at 1970-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.keys.Open(tt.raw, now)
			if err == nil {
				t.Fatalf("opened %+v", o)
			}
			wantInvalid(t, err, tt.want)
		})
	}
}

// A well-signed ticket whose payload is not exactly its kind's struct is refused when decoded.
func TestDecodeRefusesMalformedPayloads(t *testing.T) {
	k := testKeys()
	for payload, want := range map[string]string{
		`{"sql":`:                                "statement ticket is malformed: unexpected EOF",
		`{"sql":1}`:                              "statement ticket is malformed: json: cannot unmarshal number",
		`{"sql":"x","limit":3}`:                  `statement ticket is malformed: json: unknown field "limit"`,
		`{"sql":"x"}{"sql":"y"}`:                 "statement ticket is malformed: bytes after its payload",
		`{"sql":"x"} trailing`:                   "statement ticket is malformed: bytes after its payload",
		`["SELECT 1"]`:                           "statement ticket is malformed: json: cannot unmarshal array",
		string(bytes.Repeat([]byte("["), 20000)): "statement ticket is malformed",
	} {
		o, err := k.Open(k.SealRaw(Statement, Statement.Version(), now.Add(time.Minute), []byte(payload)), now)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode[statementP](o)
		wantInvalid(t, err, want)
	}
}

// Flipping any bit of a ticket, header, payload or MAC, makes it refused.
func TestEveryBitFlipIsRefused(t *testing.T) {
	k := testKeys()
	for _, p := range samples {
		raw := mustSeal(t, k, now.Add(time.Minute), p)
		for i := range raw {
			for bit := range 8 {
				flipped := bytes.Clone(raw)
				flipped[i] ^= 1 << bit
				if _, err := k.Open(flipped, now); err == nil {
					t.Fatalf("%s ticket with bit %d of byte %d flipped opened", p.TicketKind(), bit, i)
				} else if errs.CategoryOf(err) != errs.InvalidInput {
					t.Fatalf("flipped bit: %v is not invalid input", err)
				}
			}
		}
	}
}

// Rotation: a ticket sealed with the old secret opens where the old secret is the previous key,
// and no longer once it is removed; the rotated keyring seals with the new secret only.
func TestRotation(t *testing.T) {
	oldSecret, newSecret := []byte("old secret"), []byte("new secret")
	before := NewKeyring(oldSecret, nil)
	during := NewKeyring(newSecret, oldSecret)
	after := NewKeyring(newSecret, nil)
	issuedBefore := mustSeal(t, before, now.Add(time.Minute), samples[3])
	issuedDuring := mustSeal(t, during, now.Add(time.Minute), samples[3])

	for _, c := range []struct {
		name string
		keys *Keyring
		raw  []byte
		want string // "" opens
	}{
		{"old ticket, old key previous", during, issuedBefore, ""},
		{"old ticket, old key removed", after, issuedBefore, "signed with key " + before.Current().String()},
		{"new ticket, rotated keyring", during, issuedDuring, ""},
		{"new ticket, new key alone", after, issuedDuring, ""},
		{"new ticket, old key alone", before, issuedDuring, "signed with key " + after.Current().String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := OpenAs[partitionP](c.keys, c.raw, now)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantInvalid(t, err, c.want)
		})
	}
	if during.Current() != after.Current() || during.Current() == before.Current() {
		t.Errorf("key ids: before %s, during %s, after %s", before, during, after)
	}
	if got := during.String(); got != after.Current().String()+" (previous "+before.Current().String()+")" {
		t.Errorf("String() = %q", got)
	}
	if same := NewKeyring(oldSecret, oldSecret); len(same.keys) != 1 {
		t.Errorf("a previous key equal to the current one is kept twice")
	}
	if NewKeyring(nil, oldSecret) != nil {
		t.Errorf("a keyring without a current key is not nil")
	}
}

func TestSealNeedsAKey(t *testing.T) {
	var none *Keyring
	if _, err := none.Seal(now, samples[0]); errs.CategoryOf(err) != errs.Internal || !strings.Contains(err.Error(), "no cluster secret") {
		t.Errorf("sealing without a secret: %v", err)
	}
	if a, b := RandomKeyring(), RandomKeyring(); a.Current() == b.Current() {
		t.Errorf("two random keyrings share key id %s", a.Current())
	}
}

func mustSeal(t *testing.T, k *Keyring, expires time.Time, p Payload) []byte {
	t.Helper()
	raw, err := k.Seal(expires, p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q (%v), want invalid input containing %q", err, errs.CategoryOf(err), want)
	}
}
