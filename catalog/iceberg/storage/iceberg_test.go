package storage_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/cachedb/cachedb/catalog/iceberg/storage"
)

// testIceberg writes a table to MinIO through iceberg-go's SQL catalog and the registered s3
// scheme, then scans it back through a counting IO.
func (fx *fixture) testIceberg(t *testing.T) {
	storage.Register()
	ctx := context.Background()
	const warehouse = "iceberg-wh"
	fx.srv.CreateBucket(t, warehouse)

	props := iceberg.Properties{
		"type":                "sql",
		"uri":                 "file:" + filepath.Join(t.TempDir(), "catalog.db"),
		sqlcat.DriverKey:      sqliteshim.ShimName,
		sqlcat.DialectKey:     string(sqlcat.SQLite),
		"warehouse":           "s3://" + warehouse + "/wh",
		"init_catalog_tables": "true",
	}
	for k, v := range fx.cfg.Properties() {
		props[k] = v
	}
	cat, err := catalog.Load(ctx, "test", props)
	if err != nil {
		t.Fatalf("loading the SQL catalog: %v", err)
	}
	ident := table.Identifier{"ns", "events"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := cat.CreateTable(ctx, ident, schema)
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	if loc := tbl.Location(); !strings.HasPrefix(loc, "s3://"+warehouse+"/") {
		t.Fatalf("table location %s is not in the MinIO warehouse", loc)
	}

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	const rows = 1000
	arrowSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, arrowSchema)
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	rec := b.NewRecordBatch()
	b.Release()
	arrTbl := array.NewTableFromRecords(arrowSchema, []arrow.RecordBatch{rec})
	rec.Release()
	tbl, err = tbl.AppendTable(ctx, arrTbl, rows, nil)
	arrTbl.Release()
	if err != nil {
		t.Fatalf("AppendTable: %v", err)
	}
	mem.AssertSize(t, 0)

	// The data and metadata are objects in MinIO.
	list, err := fx.srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(warehouse)})
	if err != nil {
		t.Fatal(err)
	}
	var parquet, metadata int
	for _, o := range list.Contents {
		key := aws.ToString(o.Key)
		parquet += b2i(strings.HasSuffix(key, ".parquet"))
		metadata += b2i(strings.HasSuffix(key, ".metadata.json"))
	}
	if parquet == 0 || metadata == 0 {
		t.Fatalf("warehouse holds %d parquet and %d metadata files, want both", parquet, metadata)
	}

	// Scan through a counting IO, as the catalog does for EXPLAIN ANALYZE.
	loaded, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil || loaded.CurrentSnapshot() == nil ||
		loaded.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatal("the catalog does not return the appended snapshot")
	}
	var c storage.Counter
	counted := table.New(loaded.Identifier(), loaded.Metadata(), loaded.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) {
			fsys, err := loaded.FS(ctx)
			if err != nil {
				return nil, err
			}
			if _, ok := fsys.(*storage.FS); !ok {
				t.Errorf("the table reads through %T, want *storage.FS", fsys)
			}
			return storage.Counting(fsys, &c), nil
		}, cat)
	out, err := counted.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer out.Release()
	if out.NumRows() != rows {
		t.Fatalf("scan returned %d rows, want %d", out.NumRows(), rows)
	}
	if c.Bytes.Load() == 0 || c.Requests.Load() == 0 {
		t.Fatalf("counter %v: a scan from MinIO must count bytes and requests", &c)
	}
	t.Logf("scan of %d rows: %v", rows, &c)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
