package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// dashboardFile is the Grafana dashboard; the chart packages it (grafanaDashboard.enabled).
const dashboardFile = "helm/cachedb/dashboards/cachedb.json"

// dashboard is the part of a Grafana dashboard model the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels is every panel, also those inside collapsed rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// queries is every PromQL expression of the dashboard: its panels' targets and its query
// variables' label_values(SELECTOR, LABEL) selectors.
func (d dashboard) queries() []string {
	var out []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			// label_values(SELECTOR, LABEL) reads LABEL of SELECTOR's series: a grouping.
			out = append(out, fmt.Sprintf("group by (%s) (%s)", m[2], m[1]))
		} else {
			out = append(out, q)
		}
	}
	return out
}

// promqlRefs is what a PromQL expression reads: the metric names it selects and the label
// names it matches or groups by. It is a scanner for the expressions of this dashboard, not a
// full PromQL parser: string literals, durations and numbers are dropped, identifiers followed
// by "(" are functions, and the keywords are known.
func promqlRefs(expr string) (metrics, labels []string, err error) {
	if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
		return nil, nil, fmt.Errorf("unbalanced brackets")
	}
	s := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
	for _, m := range regexp.MustCompile(`\{([^}]*)\}`).FindAllStringSubmatch(s, -1) {
		for _, lm := range regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*""`).FindAllStringSubmatch(m[1], -1) {
			labels = append(labels, lm[1])
		}
	}
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ")
	grouping := regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	for _, m := range grouping.FindAllStringSubmatch(s, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	s = grouping.ReplaceAllString(s, " ")
	// Numbers and durations (offset 5m).
	s = regexp.MustCompile(`(^|[^a-zA-Z0-9_:.])[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?:ms|s|m|h|d|w|y)*`).ReplaceAllString(s, "$1 ")
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	ident := regexp.MustCompile(`\$?[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	for _, m := range ident.FindAllStringSubmatch(s, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[0]), "("))
		if m[1] != "" || keywords[name] || strings.HasPrefix(name, "$") {
			continue
		}
		metrics = append(metrics, name)
	}
	return metrics, labels, nil
}

func TestPromqlRefs(t *testing.T) {
	metrics, labels, err := promqlRefs(`histogram_quantile(0.95, sum by (le, kind) (rate(cachedb_statement_duration_seconds_bucket{namespace=~"$namespace", kind!="x{y}"}[$__rate_interval]))) / on (pod) group_left (version) max(cachedb_build_info offset 5m) > bool 1e3`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cachedb_statement_duration_seconds_bucket", "cachedb_build_info"}; !slices.Equal(metrics, want) {
		t.Errorf("metrics %v, want %v", metrics, want)
	}
	if want := []string{"namespace", "kind", "le", "kind", "pod", "version"}; !slices.Equal(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if _, _, err := promqlRefs(`sum(rate(x[5m])`); err == nil {
		t.Error("an unbalanced expression was accepted")
	}
}

// dashboardFamilies are the metric families the dashboard must show (docs/kubernetes.md's
// metrics): statements by kind and outcome and their latency, rows and bytes served, training
// reads, membership, datasets per node, shuffle bytes and the processes' memory.
var dashboardFamilies = []string{
	"cachedb_statements_total", "cachedb_statement_duration_seconds", "cachedb_served_rows_total",
	"cachedb_served_bytes_total", "cachedb_shuffle_fetched_bytes_total", "cachedb_nodes",
	"cachedb_node_events_total", "cachedb_dataset_bytes", "cachedb_dataset_loads_total",
	"cachedb_build_info", "process_resident_memory_bytes", "cachedb_object_store_read_bytes_total",
	"cachedb_object_store_requests_total", "cachedb_first_batch_seconds", "cachedb_column_cache_bytes",
	"cachedb_column_cache_hits_total", "cachedb_column_cache_misses_total",
}

// family is the metric family a selected series belongs to: a histogram's _bucket, _sum and
// _count series belong to the histogram.
func family(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") {
			return base
		}
	}
	return name
}

// The dashboard is a Grafana model whose panels all query the chosen data source, with unique
// IDs on the 24-column grid, whose expressions are well formed, use only the variables it
// defines, and together show every family of dashboardFamilies.
func TestGrafanaDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	vars := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	ids := map[int]string{}
	shown := map[string]bool{}
	for _, p := range d.allPanels() {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v is off the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not query the dashboard's data source variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
	}
	for _, q := range d.queries() {
		metrics, _, err := promqlRefs(q)
		if err != nil || len(metrics) == 0 {
			t.Errorf("%s: %v, metrics %v", q, err, metrics)
		}
		for _, m := range metrics {
			shown[family(m)] = true
		}
		for _, v := range regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)`).FindAllStringSubmatch(q, -1) {
			if !vars[v[1]] {
				t.Errorf("%s uses $%s, which the dashboard does not define", q, v[1])
			}
		}
	}
	for _, f := range dashboardFamilies {
		if !shown[f] {
			t.Errorf("no panel shows %s", f)
		}
	}
}

// checkDashboardMetrics checks the dashboard against the /metrics scrapes of a running
// cluster's pods (TestChartStandin): every metric an expression selects is one a cachedb
// process exposes (a histogram's series by its family), and every label it matches or groups
// by is one of that metric's, or one Prometheus adds to every scraped target.
func checkDashboardMetrics(t *testing.T, scrapes map[string]exposition) {
	exposed := map[string]string{}           // family -> type
	labelsOf := map[string]map[string]bool{} // series name -> label names
	for _, e := range scrapes {
		maps.Copy(exposed, e.types)
		for _, s := range e.samples {
			if labelsOf[s.name] == nil {
				labelsOf[s.name] = map[string]bool{}
			}
			for l := range s.labels {
				labelsOf[s.name][l] = true
			}
		}
	}
	// Target labels: the Prometheus Operator's from the ServiceMonitor, and Prometheus' own.
	targetLabels := map[string]bool{"namespace": true, "pod": true, "service": true, "endpoint": true,
		"container": true, "job": true, "instance": true}
	for _, q := range readDashboard(t).queries() {
		metrics, labels, err := promqlRefs(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		for _, m := range metrics {
			if _, ok := exposed[family(m)]; !ok {
				t.Errorf("%s selects %s, which no cachedb process exposes (have %v)", q, m, slices.Sorted(maps.Keys(exposed)))
			}
		}
		for _, l := range labels {
			found := targetLabels[l]
			for _, m := range metrics {
				found = found || labelsOf[m][l]
			}
			if !found {
				t.Errorf("%s uses label %s, which none of %v has", q, l, metrics)
			}
		}
	}
}

// The chart packages the dashboard, as it is in the repository, as a ConfigMap Grafana's
// sidecar loads (its label), only when grafanaDashboard.enabled.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	r := renderSet(t, valueSets["production"])
	cm := get[*corev1.ConfigMap](t, r, "ConfigMap/cachedb-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "monitoring" || cm.Annotations["grafana_folder"] != "ML" {
		t.Errorf("dashboard ConfigMap labels %v, namespace %q, annotations %v", cm.Labels, cm.Namespace, cm.Annotations)
	}
	if got := cm.Data["cachedb.json"]; got != strings.TrimSuffix(string(want), "\n") {
		t.Errorf("the ConfigMap's cachedb.json differs from %s", dashboardFile)
	}
	if _, ok := renderSet(t, valueSets["minimal"])["ConfigMap/cachedb-dashboard"]; ok {
		t.Error("the dashboard ConfigMap is rendered without grafanaDashboard.enabled")
	}
}
