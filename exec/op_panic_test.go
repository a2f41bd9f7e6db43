package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// panicOp is a two-partition operator whose partition 1 panics when executed; partition 0 is
// empty. It stands for a bug in any operator that runs in a goroutine of its consumer.
type panicOp struct{ schema *arrow.Schema }

func (p *panicOp) Schema() *arrow.Schema { return p.schema }
func (p *panicOp) Children() []Operator  { return nil }
func (p *panicOp) Partitions() int       { return 2 }
func (p *panicOp) String() string        { return "Panic" }
func (p *panicOp) Execute(_ context.Context, partition int, _ *TaskContext) (array.RecordReader, error) {
	if partition == 1 {
		panic("operator bug")
	}
	return array.NewRecordReader(p.schema, nil)
}

// A panic in a goroutine an operator starts fails the statement with an Internal error naming
// the panic; it neither ends the process (the test would die) nor leaves the consumer waiting.
func TestOperatorPanicBecomesInternalError(t *testing.T) {
	src := &panicOp{schema: schemaOf("x", opInt64)}
	for name, op := range map[string]Operator{
		"coalesce":    NewCoalesce(src),
		"repartition": NewCoalesce(NewRepartition(src, []Expr{intCol(0, "x")}, 3)),
		"sort":        NewSort(src, []SortKey{{Expr: intCol(0, "x")}}, 0),
	} {
		t.Run(name, func(t *testing.T) {
			tc := newTestContext(t, 0)
			_, err := tryCollectRows(op, tc)
			if err == nil {
				t.Fatal("no error from a panicking input")
			}
			if c := errs.CategoryOf(err); c != errs.Internal {
				t.Errorf("category %v, want internal: %v", c, err)
			}
			if !strings.Contains(err.Error(), "internal error in") || !strings.Contains(err.Error(), "operator bug") {
				t.Errorf("error %q does not report the panic", err)
			}
		})
	}
}
