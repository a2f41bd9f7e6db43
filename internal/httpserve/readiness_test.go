package httpserve

import (
	"slices"
	"testing"
)

func TestReadinessConditions(t *testing.T) {
	r := NewReadiness()
	var seen []bool
	r.Watch(func(ready bool) { seen = append(seen, ready) })
	if ok, unmet := r.Check(); !ok || unmet != nil {
		t.Fatalf("no conditions: Check = %v, %v; want ready", ok, unmet)
	}
	r.Require("serving")
	r.Require("registered")
	r.Require("serving") // the same condition
	if ok, unmet := r.Check(); ok || !slices.Equal(unmet, []string{"serving", "registered"}) {
		t.Fatalf("Check = %v, %v; want not ready: serving, registered", ok, unmet)
	}
	r.Set("serving", true)
	r.Set("registered", true)
	if ok, _ := r.Check(); !ok {
		t.Fatal("all conditions met, Check says not ready")
	}
	r.Set("registered", false) // the head forgot the node
	if ok, unmet := r.Check(); ok || !slices.Equal(unmet, []string{"registered"}) {
		t.Fatalf("Check = %v, %v; want not ready: registered", ok, unmet)
	}
	r.Set("registered", true)
	r.Stop()
	r.Set("serving", true)
	if ok, unmet := r.Check(); ok || !slices.Equal(unmet, []string{"shutting down"}) {
		t.Fatalf("after Stop: Check = %v, %v; want not ready: shutting down", ok, unmet)
	}
	// The watcher saw each change of the answer once, starting with the answer when it began.
	if want := []bool{true, false, true, false, true, false}; !slices.Equal(seen, want) {
		t.Errorf("watcher saw %v, want %v", seen, want)
	}
}

func TestNilReadinessIsReady(t *testing.T) {
	var r *Readiness
	r.Require("x")
	r.Set("x", false)
	r.Stop()
	if ok, _ := r.Check(); !ok {
		t.Error("a nil Readiness is not ready")
	}
	called := false
	r.Watch(func(ready bool) { called = ready })
	if !called {
		t.Error("Watch on a nil Readiness did not report ready")
	}
}
