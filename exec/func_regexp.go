package exec

import (
	"context"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// "regexp_like" (x, pattern [, match_type]): whether x contains a match of pattern (Go RE2
// syntax, close to MySQL's ICU for common patterns). Matching ignores case unless match_type
// contains 'c'; 'i' forces case-insensitive, 'm' multi-line, 'n' lets . match newlines. An
// invalid pattern is an InvalidInput error; NULL operands give NULL.

func init() {
	RegisterScalar("regexp_like", resolveRegexpLike)
}

func resolveRegexpLike(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	sig := stringSig{name: "regexp_like", kinds: "sss", optional: 1}
	if err := sig.check(types); err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		cast, err := castAllTo(ctx, tc, args, arrow.BinaryTypes.String)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		strs := make([]*array.String, len(cast))
		for i, c := range cast {
			strs[i] = c.(*array.String)
		}
		var (
			re      *regexp.Regexp
			lastKey string
		)
		return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
			if !allValid(cast, i) {
				return false, false, nil
			}
			flags := "i"
			if len(strs) == 3 {
				flags = regexpFlags(strs[2].Value(i))
			}
			key := flags + "\x00" + strs[1].Value(i)
			if re == nil || key != lastKey {
				expr := strs[1].Value(i)
				if flags != "" {
					expr = "(?" + flags + ")" + expr
				}
				compiled, err := regexp.Compile(expr)
				if err != nil {
					return false, false, errs.Invalidf("invalid regular expression %q: %v", strs[1].Value(i), err)
				}
				re, lastKey = compiled, key
			}
			return re.MatchString(strs[0].Value(i)), true, nil
		})
	}
	return k, boolType, nil
}

// regexpFlags turns a MySQL match_type into Go regexp flags (the last of c / i wins).
func regexpFlags(matchType string) string {
	insensitive := true
	var b strings.Builder
	for _, c := range matchType {
		switch c {
		case 'c':
			insensitive = false
		case 'i':
			insensitive = true
		case 'm':
			b.WriteByte('m')
		case 'n':
			b.WriteByte('s')
		}
	}
	if insensitive {
		b.WriteByte('i')
	}
	return b.String()
}
