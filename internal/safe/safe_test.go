package safe

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestGoTurnsPanicIntoGroupError(t *testing.T) {
	var g errgroup.Group
	Go(&g, "the test worker", func() error { panic("boom") })
	err := g.Wait()
	if errs.CategoryOf(err) != errs.Internal || err.Error() != "internal error in the test worker: boom" {
		t.Fatalf("Wait() = %v, want an Internal error naming the panic", err)
	}
}

func TestSpawnHandsResultOrPanicToFinish(t *testing.T) {
	plain := errors.New("plain")
	for name, fn := range map[string]func() error{
		"error": func() error { return plain },
		"panic": func() error { panic("boom") },
		"nil":   func() error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			got := make(chan error, 1)
			Spawn("spawned", fn, func(err error) { got <- err })
			err := <-got
			switch name {
			case "error":
				if err != plain {
					t.Errorf("finish got %v, want %v", err, plain)
				}
			case "panic":
				if errs.CategoryOf(err) != errs.Internal || !strings.Contains(err.Error(), "internal error in spawned: boom") {
					t.Errorf("finish got %v, want the panic as an Internal error", err)
				}
			default:
				if err != nil {
					t.Errorf("finish got %v, want nil", err)
				}
			}
		})
	}
}

func TestSpawnSurvivesPanicInFinish(t *testing.T) {
	done := make(chan struct{})
	Spawn("spawned", func() error { return nil }, func(error) {
		defer close(done)
		panic("finish bug")
	})
	<-done // reaching here (and the test binary staying alive) is the assertion
}
