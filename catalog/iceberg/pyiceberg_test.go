package iceberg

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
)

// pyicebergPython finds a Python with pyiceberg: $CACHEDB_PYICEBERG_PYTHON, else one of the
// test virtual environments under ~/.cache/cachedb.
func pyicebergPython(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CACHEDB_PYICEBERG_PYTHON")}
	if dir, err := os.UserCacheDir(); err == nil {
		venvs, _ := filepath.Glob(filepath.Join(dir, "cachedb", "venv-*", "bin", "python"))
		candidates = append(candidates, venvs...)
	}
	for _, py := range candidates {
		if py != "" && exec.Command(py, "-c", "import pyiceberg, pyarrow, sqlalchemy").Run() == nil {
			return py
		}
	}
	unavailable(t, "no Python with pyiceberg (set CACHEDB_PYICEBERG_PYTHON)")
	return ""
}

// TestPyicebergLake reads a lake written by pyiceberg: its SQL catalog rows are keyed by
// pyiceberg's catalog name, its URI is written SQLAlchemy's way, and its files carry
// pyiceberg's own field ids, split offsets and column sizes.
func TestPyicebergLake(t *testing.T) {
	py := pyicebergPython(t)
	dir := t.TempDir()
	out, err := exec.Command(py, "testdata/pyiceberg_lake.py", dir).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("pyiceberg writer: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var snaps struct{ First, Second int64 }
	if err := json.Unmarshal(out, &snaps); err != nil {
		t.Fatalf("writer output %q: %v", out, err)
	}
	ctx := context.Background()
	c, err := Open(ctx, Config{Name: "lake", Type: TypeSQL, URI: "sqlite:///" + filepath.Join(dir, "catalog.db"),
		Properties: map[string]string{PropCatalogName: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tbl, err := c.Table(ctx, "trips")
	if err != nil {
		t.Fatal(err)
	}
	all := scan(t, tbl, catalog.ScanRequest{})
	equalRows(t, all.rows, "1|oslo|10.5", "2|rome|NULL", "3|oslo|7.25", "4|lima|3")
	if v := explainValue(t, all.plan.Explain, "snapshot"); v != strconv.FormatInt(snaps.Second, 10) {
		t.Errorf("explain %q", all.plan.Explain)
	}
	if _, total := ratio(t, explainValue(t, all.plan.Explain, "row_groups")); total != 3 {
		t.Errorf("explain %q: want row_groups over the 3 files from pyiceberg's split offsets", all.plan.Explain)
	}
	oslo := scan(t, tbl, catalog.ScanRequest{Columns: []int{0}, Filter: eq(1, scalar.NewStringScalar("oslo"))})
	equalRows(t, oslo.rows, "1", "3")
	if kept, total := ratio(t, explainValue(t, oslo.plan.Explain, "files")); kept != 1 || total != 3 {
		t.Errorf("explain %q: want files=1/3", oslo.plan.Explain)
	}
	if fetchedBytes(t, oslo.plan) <= 0 {
		t.Errorf("Fetched %q", oslo.plan.Fetched())
	}
	old, err := c.Table(ctx, "default.trips@"+strconv.FormatInt(snaps.First, 10))
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, old, catalog.ScanRequest{Columns: []int{0}}).rows, "1", "2", "3")
}
