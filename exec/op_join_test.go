package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var (
	joinLeftSchema  = schemaOf("k", opInt64, "v", opInt64)
	joinRightSchema = schemaOf("k", opInt64, "w", opInt64)
	joinLeftRows    = [][]any{{1, 10}, {2, 20}, {2, 21}, {nil, 30}, {3, 40}}
	joinRightRows   = [][]any{{2, 15}, {2, 25}, {nil, 0}, {4, 0}, {1, 5}}
)

// joinCase is one join expectation, run through both the hash and the nested-loop join.
type joinCase struct {
	name     string
	kind     JoinKind
	right    [][]any
	residual bool // add v < w to the key equality
	want     []string
}

var joinCases = []joinCase{
	{name: "inner", kind: InnerJoin, right: joinRightRows,
		want: sorted("1|10|1|5", "2|20|2|15", "2|20|2|25", "2|21|2|15", "2|21|2|25")},
	{name: "inner residual", kind: InnerJoin, right: joinRightRows, residual: true,
		want: sorted("2|20|2|25", "2|21|2|25")},
	{name: "left", kind: LeftJoin, right: joinRightRows,
		want: sorted("1|10|1|5", "2|20|2|15", "2|20|2|25", "2|21|2|15", "2|21|2|25", "NULL|30|NULL|NULL", "3|40|NULL|NULL")},
	{name: "left residual", kind: LeftJoin, right: joinRightRows, residual: true,
		want: sorted("2|20|2|25", "2|21|2|25", "1|10|NULL|NULL", "NULL|30|NULL|NULL", "3|40|NULL|NULL")},
	{name: "left empty right", kind: LeftJoin, right: nil,
		want: sorted("1|10|NULL|NULL", "2|20|NULL|NULL", "2|21|NULL|NULL", "NULL|30|NULL|NULL", "3|40|NULL|NULL")},
	{name: "semi", kind: SemiJoin, right: joinRightRows, want: sorted("1|10", "2|20", "2|21")},
	{name: "semi residual", kind: SemiJoin, right: joinRightRows, residual: true, want: sorted("2|20", "2|21")},
	{name: "anti", kind: AntiJoin, right: joinRightRows, want: sorted("NULL|30", "3|40")},
	{name: "anti residual", kind: AntiJoin, right: joinRightRows, residual: true, want: sorted("1|10", "NULL|30", "3|40")},
	{name: "not in with NULL on the right", kind: NullAwareAntiJoin, right: joinRightRows, want: nil},
	{name: "not in without NULLs", kind: NullAwareAntiJoin, right: [][]any{{2, 0}, {4, 0}}, want: sorted("1|10", "3|40")},
	{name: "not in empty right", kind: NullAwareAntiJoin, right: nil,
		want: sorted("1|10", "2|20", "2|21", "NULL|30", "3|40")},
}

func TestHashJoinKinds(t *testing.T) {
	for _, c := range joinCases {
		for _, batchSize := range []int{1, 2, 1024} {
			t.Run(c.name, func(t *testing.T) {
				tc := newTestContext(t, batchSize)
				left := rowsSource(t, tc, joinLeftSchema, joinLeftRows...)
				right := rowsSource(t, tc, joinRightSchema, c.right...)
				var residual Expr
				if c.residual {
					residual = cmpTest("<", intCol(1, "v"), intCol(3, "w"))
				}
				op, err := NewHashJoin(left, right, c.kind, []Expr{intCol(0, "k")}, []Expr{intCol(0, "k")}, residual)
				if err != nil {
					t.Fatal(err)
				}
				if got := collectRows(t, op, tc); !slices.Equal(got, c.want) {
					t.Errorf("got %q, want %q", got, c.want)
				}
			})
		}
	}
}

func TestNestedLoopJoinKinds(t *testing.T) {
	for _, c := range joinCases {
		t.Run(c.name, func(t *testing.T) {
			tc := newTestContext(t, 3)
			left := rowsSource(t, tc, joinLeftSchema, joinLeftRows...)
			right := rowsSource(t, tc, joinRightSchema, c.right...)
			cond := cmpTest("=", intCol(0, "k"), intCol(2, "k"))
			if c.residual {
				cond = &andTestExpr{cond, cmpTest("<", intCol(1, "v"), intCol(3, "w"))}
			}
			op, err := NewNestedLoopJoin(left, right, c.kind, cond)
			if err != nil {
				t.Fatal(err)
			}
			if got := collectRows(t, op, tc); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestCrossJoinSizes(t *testing.T) {
	cases := []struct {
		left, right, batch int
		kind               JoinKind
		want               int
	}{
		{left: 5, right: 7, batch: 3, kind: InnerJoin, want: 35},
		{left: 5, right: 0, batch: 3, kind: InnerJoin, want: 0},
		{left: 0, right: 4, batch: 3, kind: InnerJoin, want: 0},
		{left: 4, right: 0, batch: 3, kind: LeftJoin, want: 4},
		{left: 4, right: 9, batch: 2, kind: SemiJoin, want: 4},
		{left: 4, right: 9, batch: 2, kind: AntiJoin, want: 0},
	}
	for _, c := range cases {
		tc := newTestContext(t, c.batch)
		left := rowsSource(t, tc, joinLeftSchema, intRows(c.left)...)
		right := rowsSource(t, tc, joinRightSchema, intRows(c.right)...)
		op, err := NewNestedLoopJoin(left, right, c.kind, nil)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := op.Execute(context.Background(), 0, tc)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for rdr.Next() {
			n := int(rdr.RecordBatch().NumRows())
			if n > c.batch {
				t.Errorf("%d x %d %s: batch of %d rows exceeds %d", c.left, c.right, c.kind, n, c.batch)
			}
			total += n
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
		if total != c.want {
			t.Errorf("%d x %d %s: got %d rows, want %d", c.left, c.right, c.kind, total, c.want)
		}
	}
}

func TestHashJoinCoercesKeyTypes(t *testing.T) {
	tc := newTestContext(t, 0)
	left := rowsSource(t, tc, schemaOf("k", opInt64), []any{1}, []any{2})
	right := rowsSource(t, tc, schemaOf("d", opDec101), []any{10}, []any{25})
	op, err := NewHashJoin(left, right, InnerJoin, []Expr{intCol(0, "k")}, []Expr{NewColumn(0, "d", opDec101)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := collectRows(t, op, tc), []string{"1|1"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestHashJoinPartitionedInputs(t *testing.T) {
	tc := newTestContext(t, 0)
	left := newSource(t, joinLeftSchema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, joinLeftSchema, []any{1, 1}, []any{2, 2})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, joinLeftSchema, []any{2, 3})})
	right := newSource(t, joinRightSchema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, joinRightSchema, []any{2, 7})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, joinRightSchema, []any{1, 8}, []any{2, 9})})
	op, err := NewHashJoin(left, right, InnerJoin, []Expr{intCol(0, "k")}, []Expr{intCol(0, "k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if op.Partitions() != 2 {
		t.Errorf("partitions = %d, want the left side's 2", op.Partitions())
	}
	want := sorted("1|1|1|8", "2|2|2|7", "2|2|2|9", "2|3|2|7", "2|3|2|9")
	for run := range 2 {
		if got := collectRows(t, op, tc); !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		// Both left partitions share one build: each right partition runs once per execution.
		if n := right.executions.Load(); n != int64(2*(run+1)) {
			t.Errorf("after %d executions the right side ran %d partitions, want %d", run+1, n, 2*(run+1))
		}
	}
}

// andTestExpr is a two-valued AND of two boolean test expressions (NULL when either is NULL and
// neither is FALSE).
type andTestExpr struct{ l, r Expr }

func (e *andTestExpr) DataType() arrow.DataType { return opBool }
func (e *andTestExpr) String() string           { return "and" }

func (e *andTestExpr) Eval(ctx context.Context, tc *TaskContext, b arrow.RecordBatch) (arrow.Array, error) {
	and, err := NewCall("and", []Expr{e.l, e.r})
	if err != nil {
		return nil, err
	}
	return and.Eval(ctx, tc, b)
}

// intRows returns n rows (i, i).
func intRows(n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{i, i}
	}
	return rows
}
