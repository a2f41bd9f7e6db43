package iceberg

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestRowGroupsWithNulls(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "nulls", plainSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "2",
	}))
	// Row groups (1, NULL), (3, NULL), (5, 6): the first two hold as many NULLs as values.
	appendJSON(t, tbl, `[{"id":1,"score":1},{"id":2},{"id":3,"score":3},{"id":4},{"id":5,"score":5},{"id":6,"score":6}]`)
	got, err := l.reader(Config{}).Table(ctx, "nulls")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter catalog.Filter
		want   []string
	}{
		{eq(2, scalar.NewInt64Scalar(1)), []string{"1"}},
		{catalog.Filter{{{Column: 2, Op: catalog.OpLtEq, Values: []scalar.Scalar{scalar.NewFloat64Scalar(3)}}}}, []string{"1", "3"}},
		{catalog.Filter{{{Column: 2, Op: catalog.OpIsNotNull}}}, []string{"1", "3", "5", "6"}},
		{catalog.Filter{{{Column: 2, Op: catalog.OpIsNull}}}, []string{"2", "4"}},
	} {
		res := scan(t, got, catalog.ScanRequest{Columns: []int{0, 2}, Filter: tc.filter})
		// The engine re-applies the filter; what matters is that no matching row is missing.
		for _, id := range tc.want {
			found := false
			for _, r := range res.rows {
				if strings.HasPrefix(r, id+"|") {
					found = true
				}
			}
			if !found {
				t.Errorf("filter %s lost row id %s: %q", tc.filter, id, res.rows)
			}
		}
	}
}

func TestFilesCatalog(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	a := appendJSON(t, l.create("default", "a", plainSchema()), `[{"id":1,"name":"x"}]`)
	b := appendJSON(t, l.create("default", "b", plainSchema()), `[{"id":2,"name":"y"}]`)
	missing := filepath.Join(l.dir, "nowhere", "v1.metadata.json")
	c, err := Open(ctx, Config{Name: "files", Type: TypeFiles, Tables: map[string]string{
		"taxi":      a.MetadataLocation(),
		"ml.events": "file://" + strings.TrimPrefix(b.MetadataLocation(), "file://"),
		"gone":      missing,
	}})
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.TableNames(ctx)
	if err != nil || strings.Join(names, ",") != "default.gone,default.taxi,ml.events" {
		t.Errorf("TableNames = %q, %v", names, err)
	}
	if nss, _ := c.Namespaces(ctx); strings.Join(nss, ",") != "default,ml" {
		t.Errorf("Namespaces = %q", nss)
	}
	if in, _ := c.TablesIn(ctx, "ML"); strings.Join(in, ",") != "events" {
		t.Errorf("TablesIn(ML) = %q", in)
	}
	taxi, err := c.Table(ctx, "TAXI")
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, taxi, catalog.ScanRequest{}).rows, "1|x|NULL")
	ev, err := c.Table(ctx, "ml.events")
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, ev, catalog.ScanRequest{}).rows, "2|y|NULL")

	_, err = c.Table(ctx, "gone")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "files") ||
		!strings.Contains(err.Error(), "gone") || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing metadata: %v, want NotFound naming the catalog, table and location", err)
	}
	if _, err := c.Table(ctx, "nope"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("unknown table: %v", err)
	}
	// Still serving after the failure.
	if _, err := c.Table(ctx, "taxi"); err != nil {
		t.Errorf("after a failed table: %v", err)
	}
}

func TestCorruptDataFile(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	bad := appendJSON(t, l.create("default", "bad", plainSchema()), `[{"id":1,"name":"x"},{"id":2,"name":"y"}]`)
	appendJSON(t, l.create("default", "good", plainSchema()), `[{"id":3,"name":"z"}]`)
	c := l.reader(Config{})
	tbl, err := c.Table(ctx, "bad")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Tasks) != 1 {
		t.Fatalf("%d tasks", len(plan.Tasks))
	}
	// Overwrite the Parquet footer's last bytes (length and magic).
	tasks, err := bad.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("%d tasks, %v", len(tasks), err)
	}
	path := strings.TrimPrefix(tasks[0].File.FilePath(), "file://")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt([]byte("garbage!"), st.Size()-8); err != nil {
		t.Fatal(err)
	}
	f.Close()

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rdr, err := plan.Tasks[0].Open(ctx, mem)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "read iceberg table lake.default.bad file ") || !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Errorf("corrupt file: %v, want an error naming the table and the file", err)
	}
	mem.AssertSize(t, 0)

	good, err := c.Table(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, good, catalog.ScanRequest{}).rows, "3|z|NULL")

	// A data file that is gone is NotFound, naming the file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = tryScan(tbl, catalog.ScanRequest{})
	t.Log(err)
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Errorf("missing data file: %v", err)
	}
}

func TestCancelAndEarlyRelease(t *testing.T) {
	l := newLake(t, "lake")
	tbl := l.create("default", "plain", plainSchema(), icecat.WithProperties(iceberg.Properties{table.ParquetRowGroupLimitKey: "1"}))
	appendJSON(t, tbl, `[{"id":1},{"id":2},{"id":3},{"id":4}]`)
	got, err := l.reader(Config{}).Table(context.Background(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := got.Scan(context.Background(), catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())

	// Released after one batch: nothing leaks.
	rdr, err := plan.Tasks[0].Open(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	rdr.Release()
	mem.AssertSize(t, 0)

	// Canceled before opening, and while reading.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := plan.Tasks[0].Open(ctx, mem); errs.CategoryOf(err) != errs.Canceled {
		t.Errorf("open with a canceled context: %v", err)
	}
	// A table looked up by a statement that ended (canceled, past its timeout) is that, not a
	// missing table.
	if _, err := l.reader(Config{}).Table(ctx, "plain"); errs.CategoryOf(err) != errs.Canceled {
		t.Errorf("table looked up with a canceled context: %v (%v), want Canceled", err, errs.CategoryOf(err))
	}
	ctx, cancel = context.WithCancel(context.Background())
	rdr, err = plan.Tasks[0].Open(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	cancel()
	for rdr.Next() {
	}
	if errs.CategoryOf(rdr.Err()) != errs.Canceled || !errors.Is(rdr.Err(), context.Canceled) {
		t.Errorf("read after cancel: %v", rdr.Err())
	}
	rdr.Release()
	mem.AssertSize(t, 0)
}

func TestOpenValidation(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{
		{Type: TypeSQL, URI: "/x.db"},
		{Name: "a.b", Type: TypeSQL, URI: "/x.db"},
		{Name: "x"},
		{Name: "x", Type: "hive"},
		{Name: "x", Type: TypeSQL},
		{Name: "x", Type: TypeSQL, URI: "mysql://h/db"},
		{Name: "x", Type: TypeREST},
		{Name: "x", Type: TypeREST, URI: "ftp://h"},
		{Name: "x", Type: TypeFiles},
		{Name: "x", Type: TypeFiles, Tables: map[string]string{"t": ""}},
		{Name: "x", Type: TypeFiles, Tables: map[string]string{"t": "/a", "default.T": "/b"}},
		{Name: "x", Type: TypeGlue, Properties: map[string]string{"glue.access-key-id": "AKIA"}},
		{Name: "x", Type: TypeGlue, Properties: map[string]string{"glue.endpoint": "not a url"}},
		{Name: "x", Type: TypeGlue, Properties: map[string]string{"glue.max-retries": "many"}},
	} {
		if _, err := Open(ctx, cfg); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("Open(%v) = %v, want InvalidInput", cfg, err)
		}
	}
	// Glue builds without contacting AWS.
	g, err := Open(ctx, Config{Name: "g", Type: TypeGlue, Properties: map[string]string{
		"glue.region": "eu-west-1", "glue.access-key-id": "AKIA", "glue.secret-access-key": "s3cr3tvalue"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.connect(ctx); err != nil {
		t.Errorf("glue connect (no network needed): %v", err)
	}
}

func TestUnreachableCatalog(t *testing.T) {
	ctx := context.Background()
	// A port with nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const secret = "topsecretvalue42"
	cases := []Config{
		{Name: "rest", Type: TypeREST, URI: "http://" + addr, Properties: map[string]string{"credential": "client:" + secret},
			Storage: storage.Config{AccessKeyID: "AK", SecretAccessKey: secret}},
		{Name: "pg", Type: TypeSQL, URI: "postgres://user:" + secret + "@" + addr + "/db?connect_timeout=2"},
		{Name: "lite", Type: TypeSQL, URI: filepath.Join(t.TempDir(), "missing.db")},
	}
	for _, cfg := range cases {
		c, err := Open(ctx, cfg) // never fails for a down endpoint
		if err != nil {
			t.Fatalf("Open(%s): %v", cfg.Name, err)
		}
		if s := cfg.String(); strings.Contains(s, secret) {
			t.Errorf("Config.String shows the secret: %s", s)
		}
		for _, call := range []func() error{
			func() error { _, err := c.TableNames(ctx); return err },
			func() error { _, err := c.Table(ctx, "ns.t"); return err },
			func() error { _, err := c.Namespaces(ctx); return err },
		} {
			err := call()
			if err == nil {
				t.Fatalf("%s: no error", cfg.Name)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, "iceberg catalog "+cfg.Name) || strings.Contains(msg, secret) {
				t.Errorf("%s: %q, want the catalog named and no secret", cfg.Name, msg)
			}
			if cfg.Type == TypeREST && !strings.Contains(msg, addr) {
				t.Errorf("%s: %q does not name the URI", cfg.Name, msg)
			}
		}
	}
}
