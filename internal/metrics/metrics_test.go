package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cachedb/cachedb/internal/errs"
)

// Every cachedb metric, once it has a value, passes the linter `promtool check metrics` runs
// (names, units, suffixes, help).
func TestMetricsFollowConventions(t *testing.T) {
	SetBuildInfo("v0.0.0-test", "abc")
	StatementDone(KindQuery, OutcomeOK, time.Now())
	Served(KindTraining, 10, 800)
	ShuffleFetched(64)
	NodeEvent("joined")
	DatasetLoad(OutcomeOK)
	SetNodeSource([]string{"alive", "suspect", "lost"}, func() map[string]int { return map[string]int{"alive": 2} })
	SetDatasetSource(func() map[string]int64 { return map[string]int64{"n1": 100} })
	problems, err := testutil.GatherAndLint(Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "cachedb_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	for _, name := range []string{"cachedb_statements_total", "cachedb_statement_duration_seconds", "cachedb_served_rows_total",
		"cachedb_served_bytes_total", "cachedb_shuffle_fetched_bytes_total", "cachedb_node_events_total",
		"cachedb_dataset_loads_total", "cachedb_build_info", "cachedb_nodes", "cachedb_dataset_bytes"} {
		if n, err := testutil.GatherAndCount(Registry, name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
}

// cachedb_nodes reports every state it is told always to, 0 when no node is in it.
func TestNodeStatesReportZero(t *testing.T) {
	SetNodeSource([]string{"alive", "suspect", "lost"}, func() map[string]int { return map[string]int{"alive": 2, "lost": 1} })
	want := `# HELP cachedb_nodes Data nodes registered with the head, by membership state.
# TYPE cachedb_nodes gauge
cachedb_nodes{state="alive"} 2
cachedb_nodes{state="lost"} 1
cachedb_nodes{state="suspect"} 0
`
	if err := testutil.GatherAndCompare(Registry, strings.NewReader(want), "cachedb_nodes"); err != nil {
		t.Error(err)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{errs.Invalidf("bad"), "invalid_argument"},
		{fmt.Errorf("planning: %w", errs.NotFoundf("no table t")), "not_found"},
		{errs.Exhaustedf("too many"), "resource_exhausted"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("boom"), "internal"},
	} {
		if got := Outcome(c.err); got != c.want {
			t.Errorf("Outcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
