package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/testutil/minio"
)

// s3EventsLake starts MinIO and writes table "remote" there: eventRows in one snapshot, one
// more row in a second (two data files).
func s3EventsLake(t *testing.T) (*minio.Server, *lake, storage.Config) {
	t.Helper()
	srv := minio.Start(t)
	srv.CreateBucket(t, "lake")
	st := storage.Config{Endpoint: srv.Endpoint, Region: minio.Region, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	storage.Register()
	l := newLakeAt(t, "lake", "s3://lake/warehouse", iceberg.Properties(st.Properties()))
	tbl := l.create("default", "remote", eventsSchema())
	tbl = appendJSON(t, tbl, eventRows())
	appendJSON(t, tbl, `[{"id":100,"region":"eu","ts":"2024-02-01 00:00:00","amount":"1.00"}]`)
	return srv, l, st
}

// TestS3Warehouse reads tables whose metadata and data live in S3 (MinIO), through the
// storage package's IO, with s3a:// spellings as Hadoop-era writers leave them.
func TestS3Warehouse(t *testing.T) {
	ctx := context.Background()
	srv, l, st := s3EventsLake(t)
	c := l.reader(Config{Storage: st})
	got, err := c.Table(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	all := scan(t, got, catalog.ScanRequest{})
	if len(all.rows) != 25 {
		t.Fatalf("%d rows, want 25", len(all.rows))
	}
	var bytes, reqs int64
	if _, err := fmt.Sscanf(all.plan.Fetched(), "bytes_fetched=%d requests=%d", &bytes, &reqs); err != nil || bytes <= 0 || reqs < 2 {
		t.Errorf("Fetched %q: want bytes and at least one request per file", all.plan.Fetched())
	}
	one := scan(t, got, catalog.ScanRequest{Columns: []int{0}})
	if b := fetchedBytes(t, one.plan); b <= 0 || b >= bytes {
		t.Errorf("one column fetched %d bytes, all %d", b, bytes)
	}
	f := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: eq(0, scalar.NewInt64Scalar(100))})
	equalRows(t, f.rows, "100")
	if kept, total := ratio(t, explainValue(t, f.plan.Explain, "files")); kept != 1 || total != 2 {
		t.Errorf("explain %q: want files=1/2", f.plan.Explain)
	}

	// The same table as a bare metadata.json, spelled s3a://.
	loc := strings.Replace(got.(*Table).MetadataLocation(), "s3://", "s3a://", 1)
	files, err := Open(ctx, Config{Name: "files", Type: TypeFiles, Tables: map[string]string{"remote": loc}, Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	ft, err := files.Table(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(scan(t, ft, catalog.ScanRequest{Columns: []int{0}}).rows); n != 25 {
		t.Errorf("files catalog over s3a:// read %d rows", n)
	}
	missing, err := Open(ctx, Config{Name: "files", Type: TypeFiles, Storage: st,
		Tables: map[string]string{"gone": "s3://lake/nowhere/v1.metadata.json"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.Table(ctx, "gone")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "s3://lake/nowhere/v1.metadata.json") ||
		strings.Contains(err.Error(), srv.SecretKey) {
		t.Errorf("missing S3 metadata: %v, want NotFound naming the location", err)
	}
}

// TestS3ColumnCacheSparesTheObjectStore: with a column cache, reading the same columns of an
// S3 table again fetches nothing from the object store, and reading more fetches only what
// the cache lacks.
func TestS3ColumnCacheSparesTheObjectStore(t *testing.T) {
	ctx := context.Background()
	_, l, st := s3EventsLake(t)
	cache := NewColumnCache(64<<20, nil)
	defer cache.Close()
	got, err := l.reader(Config{Storage: st, ColumnCache: cache}).Table(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	fetched := func(res scanResult) (bytes, reqs int64) {
		t.Helper()
		if _, err := fmt.Sscanf(res.plan.Fetched(), "bytes_fetched=%d requests=%d", &bytes, &reqs); err != nil {
			t.Fatalf("Fetched %q: %v", res.plan.Fetched(), err)
		}
		return bytes, reqs
	}
	two := catalog.ScanRequest{Columns: []int{0, 1}}
	first := scan(t, got, two)
	if b, r := fetched(first); b <= 0 || r < 2 {
		t.Fatalf("first read fetched %d bytes in %d requests; want the files read", b, r)
	}
	again := scan(t, got, two)
	if b, r := fetched(again); b != 0 || r != 0 || !slices.Equal(again.rows, first.rows) {
		t.Errorf("cached read fetched %d bytes in %d requests (rows equal: %t); want none and the same rows", b, r, slices.Equal(again.rows, first.rows))
	}
	more := scan(t, got, catalog.ScanRequest{Columns: []int{0, 1, 3}})
	all := scanTable(t, l.reader(Config{Storage: st}), "remote", catalog.ScanRequest{Columns: []int{0, 1, 3}})
	mb, _ := fetched(more)
	ab, _ := fetched(all)
	if mb <= 0 || mb >= ab || !slices.Equal(more.rows, all.rows) {
		t.Errorf("one more column fetched %d bytes, all three without a cache %d (rows equal: %t); want fewer, and the same rows", mb, ab, slices.Equal(more.rows, all.rows))
	}
}
