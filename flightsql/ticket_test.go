package flightsql

import (
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestTicketRoundTrip(t *testing.T) {
	s := newTicketSigner()
	now := time.Unix(1_700_000_000, 0)
	for _, want := range []statementTicket{
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"},
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 'ünïcødé', x FROM t WHERE y = '\x00'"},
		{kind: ticketEmpty, expires: now.Add(time.Minute)},
	} {
		got, err := s.decode(s.encode(want), now)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", want, err)
		}
		if got.kind != want.kind || got.sql != want.sql || !got.expires.Equal(want.expires) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
	}
}

func TestTicketRefusesForgedAndExpired(t *testing.T) {
	s := newTicketSigner()
	now := time.Unix(1_700_000_000, 0)
	good := s.encode(statementTicket{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"})
	tampered := append([]byte(nil), good...)
	tampered[ticketHeader] ^= 1 // change the SQL text
	other := newTicketSigner().encode(statementTicket{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"})

	tests := []struct {
		name string
		raw  []byte
		at   time.Time
	}{
		{"empty", nil, now},
		{"garbage", []byte("not a ticket at all, just some bytes that are long enough to pass"), now},
		{"tampered", tampered, now},
		{"other server", other, now},
		{"truncated", good[:len(good)-1], now},
		{"expired", good, now.Add(2 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.decode(tt.raw, tt.at)
			if err == nil {
				t.Fatal("decode accepted the ticket")
			}
			if errs.CategoryOf(err) != errs.InvalidInput {
				t.Errorf("category = %v, want invalid input (%v)", errs.CategoryOf(err), err)
			}
		})
	}
}
