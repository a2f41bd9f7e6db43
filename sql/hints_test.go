package sql

import (
	"maps"
	"testing"
)

func TestTrainingHint(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  map[string]string
		bad   bool
	}{
		{query: "SELECT a FROM t", want: nil},
		{query: "SELECT /*+ SET_VAR(x=1) */ a FROM t", want: nil},
		{query: "SELECT /*+ TRAINING() */ a FROM t", want: map[string]string{}},
		{query: "SELECT /*+ training(Seed=7, epoch = 3 shares='drop_last') */ a FROM t", want: map[string]string{"seed": "7", "epoch": "3", "shares": "drop_last"}},
		{query: `SELECT /*+ TRAINING(shares="pad", rank=1) */ * FROM t`, want: map[string]string{"shares": "pad", "rank": "1"}},
		{query: "SELECT /*+ TRAINING(seed) */ a FROM t", bad: true},
		{query: "SELECT /*+ TRAINING(seed=1, seed=2) */ a FROM t", bad: true},
		{query: "SELECT /*+ TRAINING(shares='pad) */ a FROM t", bad: true},
		{query: "SELECT /*+ TRAINING(seed=1 */ a FROM t", bad: true},
		{query: "SELEC /*+ TRAINING(seed=1) */ a", bad: true},
		// Without a hint comment the statement is not parsed here: Bind reports its errors, and
		// reads the INTERSECT and EXCEPT that vitess cannot parse.
		{query: "SELEC a", want: nil},
		{query: "SELECT a FROM t INTERSECT SELECT a FROM t", want: nil},
		{query: "SELECT 1 EXCEPT SELECT 2", want: nil},
		{query: "SELECT /*+ TRAINING(seed=1) */ a FROM t INTERSECT SELECT a FROM u", want: nil},
	} {
		got, err := TrainingHint(tt.query)
		if (err != nil) != tt.bad {
			t.Errorf("%s: error %v", tt.query, err)
			continue
		}
		if !tt.bad && (got == nil) != (tt.want == nil) || !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.query, got, tt.want)
		}
	}
}
