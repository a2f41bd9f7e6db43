package flightsql

import (
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestPreparedStoreLimitsEachClientAlone(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	store := newPreparedStore(100, 3, time.Minute, func() time.Time { return now })
	greedy, other := clientID{conn: 1, addr: "a"}, clientID{conn: 2, addr: "b"}
	for i := range 3 {
		if _, err := store.add(greedy, &preparedStatement{}); err != nil {
			t.Fatalf("statement %d of greedy: %v", i+1, err)
		}
	}
	_, err := store.add(greedy, &preparedStatement{})
	if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "limit per client") {
		t.Fatalf("greedy's fourth statement: %v, want resource exhausted naming the per-client limit", err)
	}
	h, err := store.add(other, &preparedStatement{})
	if err != nil {
		t.Fatalf("another client while greedy is at its limit: %v", err)
	}

	store.dropClient(greedy)
	if n := store.held(greedy); n != 0 {
		t.Errorf("greedy holds %d statements after its connection ended, want 0", n)
	}
	if _, err := store.get(h); err != nil {
		t.Errorf("the other client's statement after greedy's connection ended: %v", err)
	}
	if _, err := store.add(greedy, &preparedStatement{}); err != nil {
		t.Errorf("greedy after its statements were dropped: %v", err)
	}
}

func TestPreparedStoreEvictsFromHeaviestClientWhenFull(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	store := newPreparedStore(4, 3, time.Hour, func() time.Time { return now })
	heavy, light, late := clientID{conn: 1}, clientID{conn: 2}, clientID{conn: 3}
	var heavyHandles [][]byte
	for range 3 {
		now = now.Add(time.Second)
		h, err := store.add(heavy, &preparedStatement{})
		if err != nil {
			t.Fatal(err)
		}
		heavyHandles = append(heavyHandles, h)
	}
	now = now.Add(time.Second)
	lightHandle, err := store.add(light, &preparedStatement{})
	if err != nil {
		t.Fatal(err)
	}
	// Touch heavy's first statement: its second is now its least recently used.
	now = now.Add(time.Second)
	if _, err := store.get(heavyHandles[0]); err != nil {
		t.Fatal(err)
	}

	if _, err := store.add(late, &preparedStatement{}); err != nil {
		t.Fatalf("a new client when the server is full: %v, want room made by eviction", err)
	}
	if n := store.len(); n != 4 {
		t.Errorf("%d statements held, want the global limit 4", n)
	}
	if _, err := store.get(heavyHandles[1]); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("heavy's least recently used statement: %v, want it evicted", err)
	}
	for _, h := range [][]byte{heavyHandles[0], heavyHandles[2], lightHandle} {
		if _, err := store.get(h); err != nil {
			t.Errorf("statement %s: %v, want it kept", h, err)
		}
	}
}
