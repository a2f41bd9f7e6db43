package httpserve

import (
	"slices"
	"sync"
)

// Readiness is what a process must have done before it takes traffic: a set of named
// conditions, each unmet until Set true, and ready when all are met and Stop was not called.
// /ready answers from it, and watchers (the gRPC health service) follow it. A nil *Readiness
// is always ready and ignores every call. It is safe for concurrent use.
type Readiness struct {
	mu       sync.Mutex
	names    []string // in Require order, for messages
	met      map[string]bool
	stopped  bool
	last     bool
	watchers []func(ready bool)
}

// NewReadiness returns a Readiness with no conditions: ready until one is required.
func NewReadiness() *Readiness {
	return &Readiness{met: map[string]bool{}, last: true}
}

// Require adds the condition name, unmet. Requiring a name twice is one condition.
func (r *Readiness) Require(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if _, ok := r.met[name]; !ok {
		r.names = append(r.names, name)
		r.met[name] = false
	}
	r.changedLocked()
}

// Set marks the condition name met or unmet (requiring it first if needed).
func (r *Readiness) Set(name string, met bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if _, ok := r.met[name]; !ok {
		r.names = append(r.names, name)
	}
	r.met[name] = met
	r.changedLocked()
}

// Stop makes the process not ready for good: it is shutting down, so that load balancers take
// it out before its listeners close.
func (r *Readiness) Stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopped = true
	r.changedLocked()
}

// Check reports whether the process is ready and, when it is not, why: the unmet conditions
// in the order they were required, or "shutting down".
func (r *Readiness) Check() (ready bool, unmet []string) {
	if r == nil {
		return true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkLocked()
}

func (r *Readiness) checkLocked() (bool, []string) {
	var unmet []string
	if r.stopped {
		unmet = append(unmet, "shutting down")
	}
	for _, n := range r.names {
		if !r.met[n] {
			unmet = append(unmet, n)
		}
	}
	return len(unmet) == 0, unmet
}

// Watch calls f with the current answer, then each time the answer changes. Calls are made in
// order, one at a time, under the Readiness's lock: f must not call back into r.
func (r *Readiness) Watch(f func(ready bool)) {
	if r == nil {
		f(true)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, f)
	ready, _ := r.checkLocked()
	f(ready)
}

// changedLocked tells the watchers when the answer changed, then unlocks.
func (r *Readiness) changedLocked() {
	defer r.mu.Unlock()
	ready, _ := r.checkLocked()
	if ready == r.last {
		return
	}
	r.last = ready
	for _, f := range slices.Clone(r.watchers) {
		f(ready)
	}
}
