package sqlgen

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// The same seed yields the same schema and the same queries.
func TestGenerationIsDeterministic(t *testing.T) {
	run := func() []string {
		r := rand.New(rand.NewSource(42))
		s := RandomSchema(r)
		out := s.Statements()
		c := &Checker{Run: func(sql string) ([]string, error) {
			out = append(out, sql)
			return []string{"1"}, nil
		}}
		g := NewGen(r, s)
		for i := 0; i < 50; i++ {
			c.Check(g)
		}
		return out
	}
	a, b := run(), run()
	if len(a) < 50 || !slices.Equal(a, b) {
		t.Fatalf("two runs of seed 42 differ (%d and %d statements)", len(a), len(b))
	}
}

// An engine that answers every query with the same row contradicts itself under TLP WHERE when
// the partitions run as three queries (one row against three); the checker must say so.
func TestCheckerReportsContradictions(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	g := NewGen(r, RandomSchema(r))
	c := &Checker{Run: func(string) ([]string, error) { return []string{"1"}, nil }}
	found := 0
	for i := 0; i < 20; i++ {
		if err := c.tlpWhere(g); err != nil {
			f, ok := err.(*Failure)
			if !ok || f.Oracle != "TLP WHERE" || !strings.Contains(f.Detail, "1 rows vs 3") {
				t.Fatalf("got %v, want a TLP WHERE failure", err)
			}
			found++
		}
	}
	if found == 0 {
		t.Fatal("no contradiction reported in 20 checks")
	}
}

// A twin engine that answers differently is a failure.
func TestCheckerComparesWithTheTwin(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	g := NewGen(r, RandomSchema(r))
	c := &Checker{
		Run:  func(string) ([]string, error) { return []string{"1"}, nil },
		Twin: func(string) ([]string, error) { return []string{"2"}, nil },
	}
	if f := c.Check(g); f == nil || !strings.HasPrefix(f.Oracle, "twin") {
		t.Fatalf("got %v, want a twin failure", f)
	}
}
