package cluster

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// rebuildFrame is the function a background rebuild runs in.
const rebuildFrame = "cluster.(*Datasets).rebuild.func"

// rebuildRunning reports whether a goroutine is running a rebuild now.
func rebuildRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), rebuildFrame)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Close ends the background rebuilds: when it returns no rebuild runs, and no goroutine the
// registry started outlives it, whether the rebuild waits to retry (no node is alive) or is in
// a call to a node that does not answer.
func TestDatasetsCloseStopsRebuilds(t *testing.T) {
	for _, tt := range []struct {
		name string
		hang bool
	}{
		{name: "waiting to retry with no node alive"},
		{name: "in a call to a node that hangs", hang: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := startMembershipRegistry(t, "a", "b")
			r.create(t, "d", 4)
			hang := make(chan string)
			if tt.hang {
				r.stores["b"].mu.Lock()
				r.stores["b"].hang = hang
				r.stores["b"].mu.Unlock()
			}
			// Every goroutine that runs now (servers, connections) is the test's; any other
			// one left after Close is the registry's.
			before := goleak.IgnoreCurrent()

			// a goes silent until lost; b too, unless it hangs instead.
			for range 11 {
				if tt.hang {
					tick(t, r.m, r.clock, "b")
				} else {
					tick(t, r.m, r.clock)
				}
			}
			want := "a=lost b=lost"
			if tt.hang {
				want = "a=lost b=alive"
			}
			if got := states(r.m); got != want {
				t.Fatalf("states %s, want %s", got, want)
			}
			if tt.hang {
				select {
				case <-hang: // the rebuild is in a call to b
				case <-time.After(eventually):
					t.Fatal("the rebuild never called b")
				}
			}
			deadline := time.Now().Add(eventually)
			for !rebuildRunning() {
				if time.Now().After(deadline) {
					t.Fatal("no rebuild runs after the loss")
				}
				time.Sleep(time.Millisecond)
			}

			r.d.Close()
			if rebuildRunning() {
				t.Fatal("a rebuild still runs after Close returned")
			}
			// Connections the registry closed end on their own time; a deadline only guards
			// against a hang.
			for err := goleak.Find(before); err != nil; err = goleak.Find(before) {
				if time.Now().After(deadline) {
					t.Fatalf("goroutines outlive Close: %v", err)
				}
			}
			// Nothing starts after Close, even when the membership still changes.
			if _, err := r.m.Register("c", "127.0.0.1:1", "boot-c"); err != nil {
				t.Fatal(err)
			}
			if rebuildRunning() {
				t.Error("a rebuild started after Close")
			}
		})
	}
}
