package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

func TestStatisticsFromManifests(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "events", eventsSchema())
	// Two snapshots, two files: ids 0..9 then 100..104; amount NULL on every third row.
	for _, ids := range [][2]int{{0, 10}, {100, 105}} {
		var rows []string
		for id := ids[0]; id < ids[1]; id++ {
			amount := fmt.Sprintf("%q", fmt.Sprintf("%d.50", id))
			if id%3 == 0 {
				amount = "null"
			}
			rows = append(rows, fmt.Sprintf(`{"id":%d,"region":"r%d","ts":"2024-01-%02d 10:00:00","amount":%s}`, id, id%4, 1+id%28, amount))
		}
		tbl = appendJSON(t, tbl, "["+strings.Join(rows, ",")+"]")
	}
	c := l.reader(Config{})
	got, err := c.Table(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := got.(catalog.StatisticsTable)
	if !ok {
		t.Fatal("an Iceberg table does not implement catalog.StatisticsTable")
	}
	stats, err := st.Statistics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows != 15 {
		t.Errorf("Rows = %d, want 15", stats.Rows)
	}
	if len(stats.Columns) != 4 {
		t.Fatalf("%d column statistics, want 4", len(stats.Columns))
	}
	id, region, ts, amount := stats.Columns[0], stats.Columns[1], stats.Columns[2], stats.Columns[3]
	if id.Min == nil || id.Max == nil || id.Min.String() != "0" || id.Max.String() != "104" || id.Nulls != 0 {
		t.Errorf("id: %+v, want bounds 0..104 and no nulls", id)
	}
	if region.Min == nil || region.Min.String() != "r0" || region.Max.String() != "r3" {
		t.Errorf("region: %+v, want bounds r0..r3", region)
	}
	if ts.Min == nil || !strings.HasPrefix(ts.Min.String(), "2024-01-01") || !strings.HasPrefix(ts.Max.String(), "2024-01-21") {
		t.Errorf("ts: %+v, want bounds 2024-01-01..2024-01-21", ts)
	}
	// Nulls at ids 0, 3, 6, 9, 102: five.
	if amount.Nulls != 5 || amount.Min == nil || amount.Min.String() != "1.5" || amount.Max.String() != "104.5" || amount.Min.DataType().String() != "decimal(10, 2)" {
		t.Errorf("amount: %+v, want 5 nulls and bounds 1.50..104.50", amount)
	}
	if id.Distinct != -1 {
		t.Errorf("id distinct = %d without Puffin statistics, want -1 (unknown)", id.Distinct)
	}

	// An older snapshot has its own statistics.
	first := tbl.Metadata().Snapshots()[0].SnapshotID
	old, err := c.Table(ctx, fmt.Sprintf("events@%d", first))
	if err != nil {
		t.Fatal(err)
	}
	oldStats, err := old.(catalog.StatisticsTable).Statistics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if oldStats.Rows != 10 || oldStats.Columns[0].Max.String() != "9" {
		t.Errorf("first snapshot: rows %d, id max %v; want 10 and 9", oldStats.Rows, oldStats.Columns[0].Max)
	}
}

func TestStatisticsOfEmptyTable(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	l.create("default", "empty", eventsSchema())
	got, err := l.reader(Config{}).Table(ctx, "empty")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := got.(catalog.StatisticsTable).Statistics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows != 0 || len(stats.Columns) != 4 {
		t.Errorf("empty table: %+v, want 0 rows and 4 columns", stats)
	}
}

// TestPuffinDistinctCounts reads the "ndv" of theta sketch blobs listed in the table metadata,
// for the pinned snapshot or else its nearest ancestor with statistics.
func TestPuffinDistinctCounts(t *testing.T) {
	l := newLake(t, "lake")
	tbl := l.create("default", "events", eventsSchema())
	tbl = appendJSON(t, tbl, eventRows())
	tbl = appendJSON(t, tbl, eventRows())
	snaps := tbl.Metadata().Snapshots()
	first, second := snaps[0], snaps[1]

	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids do not fit a float64
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["statistics"] = []any{map[string]any{
		"snapshot-id": first.SnapshotID, "statistics-path": "s3://b/stats.puffin",
		"file-size-in-bytes": 100, "file-footer-size-in-bytes": 50,
		"blob-metadata": []any{
			map[string]any{"type": thetaSketchBlob, "snapshot-id": first.SnapshotID, "sequence-number": 1,
				"fields": []int{1}, "properties": map[string]string{"ndv": "24"}},
			map[string]any{"type": thetaSketchBlob, "snapshot-id": first.SnapshotID, "sequence-number": 1,
				"fields": []int{2}, "properties": map[string]string{"ndv": "3"}},
			map[string]any{"type": "other-blob", "snapshot-id": first.SnapshotID, "sequence-number": 1,
				"fields": []int{3}, "properties": map[string]string{"ndv": "7"}},
		},
	}}
	raw, err = json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range []*table.Snapshot{&first, &second} {
		got := puffinDistinct(meta, snap)
		if len(got) != 2 || got[1] != 24 || got[2] != 3 {
			t.Errorf("snapshot %d: distinct counts %v, want map[1:24 2:3] (the second snapshot falls back to its parent's)", snap.SnapshotID, got)
		}
	}
	if got := puffinDistinct(tbl.Metadata(), &second); got != nil {
		t.Errorf("metadata without statistics files: %v, want none", got)
	}
}
