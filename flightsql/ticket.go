package flightsql

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// ticketKind says what DoGet must do with a statement ticket.
type ticketKind byte

const (
	// ticketQuery runs the SQL text the ticket carries.
	ticketQuery ticketKind = 1
	// ticketEmpty yields an empty result: the statement already ran in GetFlightInfo.
	ticketEmpty ticketKind = 2
	// ticketEpoch produces one segment of a training read (engine.ReadEpoch).
	ticketEpoch ticketKind = 3
)

const (
	ticketVersion  = 6
	ticketHeader   = 1 + 1 + 8 // version, kind, expiry (unix nanoseconds)
	ticketMACBytes = sha256.Size
)

// statementTicket is what a statement ticket carries: everything DoGet needs, so the server
// keeps no state between GetFlightInfo and DoGet and a ticket may be redeemed more than once
// until it expires.
type statementTicket struct {
	kind    ticketKind
	expires time.Time
	// session is the naming context the statement was planned in; DoGet runs it there too.
	session engine.Session
	// stage, when set, makes the ticket one part of a distributed execution of the query
	// (engine.ExecuteStage). Otherwise the ticket runs the whole query here.
	stage *ticketStage
	sql   string
	// epoch is the segment of a ticketEpoch ticket (which has no SQL).
	epoch *engine.EpochSlice
}

// ticketStage is a statement ticket's part of a distributed execution: cluster.Stage without
// what the ticket carries anyway (SQL, session, expiry), and the index of the data node that
// redeems it (-1: the head).
type ticketStage struct {
	query  string
	nodes  []string
	owners [][]int
	self   int
}

// ticketSigner signs and verifies tickets with a key private to one server process, so a
// client cannot forge a ticket or extend its expiry.
type ticketSigner struct {
	key []byte
}

// newTicketSigner signs with key, or with a fresh random key when key is empty (crypto/rand.Read
// does not fail: it aborts the program when the system has no randomness at all).
func newTicketSigner(key []byte) *ticketSigner {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &ticketSigner{key: key}
}

func (s *ticketSigner) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(payload)
	return h.Sum(nil)
}

// encode serializes and signs t.
func (s *ticketSigner) encode(t statementTicket) []byte {
	buf := make([]byte, ticketHeader, ticketHeader+len(t.sql)+ticketMACBytes)
	buf[0] = ticketVersion
	buf[1] = byte(t.kind)
	binary.BigEndian.PutUint64(buf[2:10], uint64(t.expires.UnixNano()))
	buf = appendString(buf, t.session.Catalog)
	buf = appendString(buf, t.session.Schema)
	names := slices.Sorted(maps.Keys(t.session.Pins))
	buf = binary.AppendUvarint(buf, uint64(len(names)))
	for _, name := range names {
		buf = appendString(buf, name)
		buf = appendString(buf, t.session.Pins[name])
	}
	// 0: the whole query; self+2: a part of a distributed execution.
	if t.stage == nil {
		buf = binary.AppendUvarint(buf, 0)
	} else {
		st := t.stage
		buf = binary.AppendUvarint(buf, uint64(st.self+2))
		buf = appendString(buf, st.query)
		buf = binary.AppendUvarint(buf, uint64(len(st.nodes)))
		for _, n := range st.nodes {
			buf = appendString(buf, n)
		}
		buf = binary.AppendUvarint(buf, uint64(len(st.owners)))
		for _, owners := range st.owners {
			buf = binary.AppendUvarint(buf, uint64(len(owners)))
			for _, o := range owners {
				buf = binary.AppendUvarint(buf, uint64(o))
			}
		}
	}
	if t.kind == ticketEpoch {
		buf = appendEpochSlice(buf, t.epoch)
	} else {
		buf = append(buf, t.sql...)
	}
	return append(buf, s.mac(buf)...)
}

// decode verifies and parses a ticket. Any ticket this server did not sign, or that has
// expired at now, is an InvalidInput error; decode never panics on arbitrary bytes.
func (s *ticketSigner) decode(raw []byte, now time.Time) (statementTicket, error) {
	if len(raw) < ticketHeader+ticketMACBytes {
		return statementTicket{}, errs.Invalidf("ticket is not valid: too short (%d bytes)", len(raw))
	}
	payload, sum := raw[:len(raw)-ticketMACBytes], raw[len(raw)-ticketMACBytes:]
	if !hmac.Equal(sum, s.mac(payload)) {
		return statementTicket{}, errs.Invalidf("ticket is not valid: it was not issued by this server")
	}
	if payload[0] != ticketVersion {
		return statementTicket{}, errs.Invalidf("ticket is not valid: unknown version %d", payload[0])
	}
	t := statementTicket{
		kind:    ticketKind(payload[1]),
		expires: time.Unix(0, int64(binary.BigEndian.Uint64(payload[2:10]))),
	}
	rest := payload[ticketHeader:]
	var ok1, ok2 bool
	t.session.Catalog, rest, ok1 = readString(rest)
	t.session.Schema, rest, ok2 = readString(rest)
	n, k := binary.Uvarint(rest)
	if !ok1 || !ok2 || k <= 0 || n > uint64(len(rest)) {
		return statementTicket{}, errs.Invalidf("ticket is not valid: truncated")
	}
	rest = rest[k:]
	for range n {
		if t.session.Pins == nil {
			t.session.Pins = map[string]string{}
		}
		var name, version string
		name, rest, ok1 = readString(rest)
		version, rest, ok2 = readString(rest)
		if !ok1 || !ok2 {
			return statementTicket{}, errs.Invalidf("ticket is not valid: truncated")
		}
		t.session.Pins[name] = version
	}
	self, k := binary.Uvarint(rest)
	if k <= 0 || self > 1<<20 {
		return statementTicket{}, errs.Invalidf("ticket is not valid: truncated")
	}
	rest = rest[k:]
	if self > 0 {
		var err error
		if t.stage, rest, err = readStage(rest, int(self)-2); err != nil {
			return statementTicket{}, err
		}
	}
	if t.kind == ticketEpoch {
		var err error
		if t.epoch, rest, err = readEpochSlice(rest); err != nil {
			return statementTicket{}, err
		}
		if len(rest) > 0 {
			return statementTicket{}, errs.Invalidf("ticket is not valid: %d bytes too many", len(rest))
		}
	} else {
		t.sql = string(rest)
	}
	if t.kind != ticketQuery && t.kind != ticketEmpty && t.kind != ticketEpoch {
		return statementTicket{}, errs.Invalidf("ticket is not valid: unknown kind %d", t.kind)
	}
	if now.After(t.expires) {
		return statementTicket{}, errs.Invalidf("ticket expired at %s; run the statement again", t.expires.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// readStage reads the ticketStage that encode wrote after its self field.
func readStage(rest []byte, self int) (*ticketStage, []byte, error) {
	truncated := errs.Invalidf("ticket is not valid: truncated")
	st := &ticketStage{self: self}
	var ok bool
	if st.query, rest, ok = readString(rest); !ok {
		return nil, nil, truncated
	}
	count := func() (int, bool) {
		v, k := binary.Uvarint(rest)
		if k <= 0 || v > uint64(len(rest)) {
			return 0, false
		}
		rest = rest[k:]
		return int(v), true
	}
	n, ok := count()
	if !ok {
		return nil, nil, truncated
	}
	for range n {
		var addr string
		if addr, rest, ok = readString(rest); !ok {
			return nil, nil, truncated
		}
		st.nodes = append(st.nodes, addr)
	}
	if n, ok = count(); !ok {
		return nil, nil, truncated
	}
	st.owners = make([][]int, n)
	for i := range st.owners {
		tasks, ok := count()
		if !ok {
			return nil, nil, truncated
		}
		st.owners[i] = make([]int, tasks)
		for j := range tasks {
			v, k := binary.Uvarint(rest)
			if k <= 0 || v >= uint64(len(st.nodes)) {
				return nil, nil, truncated
			}
			st.owners[i][j], rest = int(v), rest[k:]
		}
	}
	if st.self >= len(st.nodes) {
		return nil, nil, truncated
	}
	return st, rest, nil
}

// appendString appends s with a uvarint length prefix.
func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// readString reads what appendString wrote; ok is false when b is too short.
func readString(b []byte) (s string, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
