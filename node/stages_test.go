package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// fakeClock runs AfterFunc callbacks when Advance passes their time, in the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock by d and runs the timers due by then, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

func newTestRegistry() (*stageRegistry, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &stageRegistry{base: context.Background(), work: &background{}, clock: clock, idle: time.Minute}, clock
}

// waitEnded waits for run's context to end and the registry to forget it (context.AfterFunc
// runs in its own goroutine).
func waitEnded(t *testing.T, r *stageRegistry, run *stageRun) {
	t.Helper()
	select {
	case <-run.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the execution's context did not end")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		held := r.runs[run.query] == run
		r.mu.Unlock()
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry still holds an ended execution")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStageEndsWhenIdle(t *testing.T) {
	r, clock := newTestRegistry()
	st := cluster.Stage{Query: "q", Expires: clock.Now().Add(time.Hour)}
	a, err := r.open(st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.open(st)
	if err != nil || b != a {
		t.Fatalf("a second reader of the execution got %p, %v; want the same run", b, err)
	}
	r.close(a)
	clock.Advance(2 * time.Minute)
	if a.ctx.Err() != nil {
		t.Fatal("the execution ended while a reader was open")
	}
	r.close(b)
	clock.Advance(59 * time.Second)
	if a.ctx.Err() != nil {
		t.Fatal("the execution ended before the idle timeout")
	}
	// A reader opening within the timeout keeps it; its close starts a new idle period.
	c, _ := r.open(st)
	clock.Advance(time.Minute)
	if c != a || a.ctx.Err() != nil {
		t.Fatal("an idle timer of an earlier idle period ended the execution")
	}
	r.close(c)
	clock.Advance(time.Minute)
	waitEnded(t, r, a)
	if !errors.Is(context.Cause(a.ctx), errStageIdle) {
		t.Errorf("ended by %v, want the idle timeout", context.Cause(a.ctx))
	}
	// An execution that went idle may be started again (a client reading endpoints slowly).
	again, err := r.open(st)
	if err != nil || again == a || again.ctx.Err() != nil {
		t.Fatalf("reopening an idle-ended execution: %v", err)
	}
}

func TestStageEndsWhenItsTicketsExpire(t *testing.T) {
	r, clock := newTestRegistry()
	run, err := r.open(cluster.Stage{Query: "q", Expires: clock.Now().Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
	waitEnded(t, r, run)
	if !errors.Is(context.Cause(run.ctx), errStageExpired) {
		t.Errorf("ended by %v, want the expiry", context.Cause(run.ctx))
	}
}

func TestCanceledStageIsRefusedUntilItExpires(t *testing.T) {
	r, clock := newTestRegistry()
	st := cluster.Stage{Query: "q", Expires: clock.Now().Add(10 * time.Minute)}
	run, err := r.open(st)
	if err != nil {
		t.Fatal(err)
	}
	r.cancel(st.Query, st.Expires)
	waitEnded(t, r, run)
	if errs.CategoryOf(context.Cause(run.ctx)) != errs.Canceled {
		t.Errorf("ended by %v, want a cancel", context.Cause(run.ctx))
	}
	if _, err := r.open(st); errs.CategoryOf(err) != errs.Canceled {
		t.Errorf("opening a canceled execution: %v, want errs.Canceled", err)
	}
	// Canceling an execution this process never ran also refuses it (a late first fetch).
	other := cluster.Stage{Query: "other", Expires: clock.Now().Add(5 * time.Minute)}
	r.cancel(other.Query, other.Expires)
	if _, err := r.open(other); errs.CategoryOf(err) != errs.Canceled {
		t.Errorf("opening an execution canceled before it started here: %v, want errs.Canceled", err)
	}
	// Once the tickets expired, the next cancel sweeps the remembered ids.
	clock.Advance(11 * time.Minute)
	r.cancel("late", clock.Now().Add(time.Minute))
	r.mu.Lock()
	left := len(r.canceled)
	r.mu.Unlock()
	if left != 1 {
		t.Errorf("%d canceled executions remembered after their expiry, want 1 (the latest)", left)
	}
}

// TestAnalyzedStageKeepsItsProfileUntilItsTicketsExpire: the measurements of an analyzed
// execution outlive it here until its tickets expire, so the head can collect them after the
// last reader left; an execution planned without Analyze has none; at most maxProfiles are kept.
func TestAnalyzedStageKeepsItsProfileUntilItsTicketsExpire(t *testing.T) {
	r, clock := newTestRegistry()
	values, err := exec.NewValues(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(query string, analyzed bool) *stageRun {
		run, err := r.open(cluster.Stage{Query: query, Expires: clock.Now().Add(10 * time.Minute), Analyze: analyzed})
		if err != nil {
			t.Fatal(err)
		}
		run.op, run.planned, run.analyzed = exec.Instrument(values), true, analyzed
		return run
	}
	run := open("measured", true)
	if text, ok := r.profile("measured"); !ok || !strings.Contains(text, "(not run here)") {
		t.Fatalf("profile of a running analyzed execution: %q, %v", text, ok)
	}
	plain := open("plain", false)
	if _, ok := r.profile("plain"); ok {
		t.Error("an execution planned without Analyze has a profile")
	}
	r.closeLast(run)
	r.closeLast(plain)
	waitEnded(t, r, run)
	if _, ok := r.profile("measured"); !ok {
		t.Fatal("the profile went with the execution")
	}
	clock.Advance(10 * time.Minute)
	if _, ok := r.profile("measured"); ok {
		t.Error("the profile outlived the execution's tickets")
	}
	for i := range maxProfiles + 5 {
		run := open(fmt.Sprint("q", i), true)
		r.closeLast(run)
		waitEnded(t, r, run) // a run ends, and keeps its profile, asynchronously
	}
	r.mu.Lock()
	kept := len(r.profiles)
	r.mu.Unlock()
	if kept != maxProfiles {
		t.Errorf("%d profiles kept, want at most %d", kept, maxProfiles)
	}
}
