package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/stream"
)

var limitTestSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

// limitTestCounting wraps a source and counts the batches pulled from it.
type limitTestCounting struct {
	*aggTestSource
	pulled *int
}

func (c limitTestCounting) Execute(ctx context.Context, p int, tc *TaskContext) (array.RecordReader, error) {
	rdr, err := c.aggTestSource.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	return stream.Pull(ctx, rdr.Schema(), func() (arrow.RecordBatch, error) {
		if !rdr.Next() {
			return nil, rdr.Err()
		}
		*c.pulled++
		b := rdr.RecordBatch()
		b.Retain()
		return b, nil
	}, rdr.Release), nil
}

func TestLimit(t *testing.T) {
	// Three batches: 0..3, 4..6, 7..9.
	batches := []string{`[{"v":0},{"v":1},{"v":2},{"v":3}]`, `[{"v":4},{"v":5},{"v":6}]`, `[{"v":7},{"v":8},{"v":9}]`}
	tests := []struct {
		offset, count int64
		want          string
		pulled        int
	}{
		{0, -1, "0 1 2 3 4 5 6 7 8 9", 3},
		{0, 0, "", 0},
		{0, 4, "0 1 2 3", 1},
		{0, 5, "0 1 2 3 4", 2},
		{2, 3, "2 3 4", 2},
		{4, 3, "4 5 6", 2},
		{9, 5, "9", 3},
		{10, 5, "", 3},
		{50, -1, "", 3},
		{3, -1, "3 4 5 6 7 8 9", 3},
		{-1, 1, "0", 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("offset=%d count=%d", tt.offset, tt.count), func(t *testing.T) {
			tc, mem := aggTestContext(t, 0)
			defer mem.AssertSize(t, 0)
			pulled := 0
			src := limitTestCounting{&aggTestSource{schema: limitTestSchema, parts: [][]string{batches}}, &pulled}
			op := NewLimit(src, tt.offset, tt.count)
			aggEqual(t, aggTestRows(t, op, tc), strings.Fields(tt.want))
			if pulled != tt.pulled {
				t.Errorf("pulled %d input batches, want %d", pulled, tt.pulled)
			}
		})
	}
}

func TestLimitCanceled(t *testing.T) {
	tc, mem := aggTestContext(t, 0)
	defer mem.AssertSize(t, 0)
	src := &aggTestSource{schema: limitTestSchema, parts: [][]string{{`[{"v":1}]`}}}
	ctx, cancel := context.WithCancel(context.Background())
	rdr, err := NewLimit(src, 0, 5).Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	cancel()
	if rdr.Next() {
		t.Fatal("Next after cancel returned a batch")
	}
	if rdr.Err() == nil || !strings.Contains(rdr.Err().Error(), "canceled") {
		t.Fatalf("Err() = %v, want a cancellation", rdr.Err())
	}
}

func TestLimitString(t *testing.T) {
	if got := NewLimit(&aggTestSource{schema: limitTestSchema}, 0, 5).String(); got != "Limit(offset=0, count=5)" {
		t.Errorf("String() = %q", got)
	}
}
