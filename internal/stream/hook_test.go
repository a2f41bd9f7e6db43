package stream

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// noRetain is a reader whose Retain does nothing and whose Release ends it at once, like a
// reader meant to have one owner: the wrapper must still release it exactly once.
type noRetain struct {
	array.RecordReader
	releases atomic.Int32
}

func (n *noRetain) Retain() {}
func (n *noRetain) Release() {
	if n.releases.Add(1) == 1 {
		n.RecordReader.Release()
	}
}

func TestOnReleaseRunsOnceAfterTheWrappedReader(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 2}
	inner := &noRetain{RecordReader: Pull(context.Background(), schema, src.next, src.close)}
	var hooks atomic.Int32
	r := OnRelease(inner, func() {
		if inner.releases.Load() != 1 {
			t.Errorf("hook ran before the wrapped reader was released")
		}
		hooks.Add(1)
	})
	r.Retain()
	r.Retain()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	r.Release()
	r.Release()
	if hooks.Load() != 0 || inner.releases.Load() != 0 {
		t.Fatal("a Release that left a reference ran the hook or released the wrapped reader")
	}
	r.Release()
	r.Release() // one too many
	if hooks.Load() != 1 || inner.releases.Load() != 1 || src.closes.Load() != 1 {
		t.Fatalf("hook %d, wrapped releases %d, closes %d; want 1 each", hooks.Load(), inner.releases.Load(), src.closes.Load())
	}
	if r.Next() {
		t.Fatal("Next after the final Release returned true")
	}
}

func TestOnReleaseDrainedTellsHowTheStreamEnded(t *testing.T) {
	cases := []struct {
		name    string
		left    int
		failAt  int
		reads   int
		drained bool
	}{
		{"read to the end", 2, 0, 3, true},
		{"abandoned", 2, 0, 1, false},
		{"never read", 2, 0, 0, false},
		{"failed", 2, 2, 3, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &source{t: t, mem: checked(t), left: c.left, failAt: c.failAt}
			var got []bool
			r := OnReleaseDrained(Pull(context.Background(), schema, src.next, src.close), func(d bool) { got = append(got, d) })
			for range c.reads {
				r.Next()
			}
			r.Release()
			if len(got) != 1 || got[0] != c.drained {
				t.Fatalf("hook calls %v, want one with drained=%v", got, c.drained)
			}
		})
	}
}

func TestOnReleaseConcurrentRetainRelease(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 1}
	var hooks atomic.Int32
	r := OnRelease(Pull(context.Background(), schema, src.next, src.close), func() { hooks.Add(1) })
	var wg sync.WaitGroup
	for range 16 {
		r.Retain()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Retain()
				r.Release()
			}
			r.Release()
		}()
	}
	r.Release()
	wg.Wait()
	if hooks.Load() != 1 || src.closes.Load() != 1 {
		t.Fatalf("hook ran %d times, onClose %d times; want 1 each", hooks.Load(), src.closes.Load())
	}
}
