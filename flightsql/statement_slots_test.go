package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestStatementSlotsAreCountedPerClient(t *testing.T) {
	slots := newStatementSlots(2)
	a := context.WithValue(context.Background(), clientKey{}, clientID{conn: 1, addr: "a"})
	b := context.WithValue(context.Background(), clientKey{}, clientID{conn: 2, addr: "b"})
	r1, err := slots.acquire(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slots.acquire(a); err != nil {
		t.Fatal(err)
	}
	_, err = slots.acquire(a)
	if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "limit per client") {
		t.Fatalf("a third statement over a limit of 2: %v, want resource exhausted naming the limit", err)
	}
	if _, err := slots.acquire(b); err != nil {
		t.Fatalf("another client: %v", err)
	}
	r1()
	r1() // a second call gives nothing back
	if n := slots.inUse(clientID{conn: 1, addr: "a"}); n != 1 {
		t.Errorf("a holds %d slots after giving one back twice, want 1", n)
	}
	if _, err := slots.acquire(a); err != nil {
		t.Errorf("after a slot came back: %v", err)
	}
	slots.forget(clientID{conn: 1, addr: "a"})
	if n := slots.inUse(clientID{conn: 1, addr: "a"}); n != 0 {
		t.Errorf("a holds %d slots after its connection ended, want 0", n)
	}
}
