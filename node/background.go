package node

import (
	"context"
	"sync"
	"time"

	"github.com/cachedb/cachedb/internal/safe"
)

// background counts the goroutines a runtime starts for itself (timer and context callbacks,
// cancel broadcasts), so that Close can wait for them. Once it is shut, nothing new is counted:
// each method says what it does instead.
type background struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// add counts one goroutine to come, unless the runtime is closing.
func (b *background) add() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

// wait refuses new goroutines and waits for the counted ones to end.
func (b *background) wait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// afterFunc is context.AfterFunc(ctx, f), counted until f returns or stop stops it. Once the
// runtime is closing it schedules nothing and returns false: the caller undoes what f would
// have ended.
func (b *background) afterFunc(ctx context.Context, f func()) (stop func() bool, ok bool) {
	if !b.add() {
		return nil, false
	}
	return b.counted(context.AfterFunc(ctx, func() {
		defer b.wg.Done()
		f()
	})), true
}

// afterTime is clock.AfterFunc(d, f), counted until f returns or stop stops it. Once the runtime
// is closing it schedules nothing: the timers the runtime sets bound executions that end with
// it.
func (b *background) afterTime(clock Clock, d time.Duration, f func()) (stop func() bool) {
	if !b.add() {
		return func() bool { return false }
	}
	return b.counted(clock.AfterFunc(d, func() {
		defer b.wg.Done()
		f()
	}))
}

// counted wraps the stop of a counted callback: stopping it before it ran uncounts it.
func (b *background) counted(stop func() bool) func() bool {
	var once sync.Once
	return func() bool {
		stopped := stop()
		if stopped {
			once.Do(b.wg.Done)
		}
		return stopped
	}
}

// spawn runs fn in a counted goroutine (safe.Spawn, finish after it); once the runtime is
// closing it runs nothing.
func (b *background) spawn(where string, fn func() error, finish func(error)) {
	if !b.add() {
		return
	}
	safe.Spawn(where, fn, func(err error) {
		defer b.wg.Done()
		if finish != nil {
			finish(err)
		}
	})
}
