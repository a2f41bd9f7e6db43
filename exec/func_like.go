package exec

import (
	"context"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// "like" (x, pattern [, escape]): % matches any sequence, _ any one character, the escape
// character (backslash by default) makes the next character literal. Characters match exactly:
// strings compare by their bytes everywhere (docs/architecture.md, "Strings and collation").
// NULL operands give NULL.

func init() {
	RegisterScalar("like", resolveLike)
}

func resolveLike(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("like", types, 2, 3); err != nil {
		return nil, nil, err
	}
	for _, t := range types {
		if !isNullType(t) && !isNumericType(t) && !isStringType(t) && !isTemporalType(t) {
			return nil, nil, errs.Invalidf("LIKE does not apply to values of type %s", t)
		}
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		cast, err := castAllTo(ctx, tc, args, arrow.BinaryTypes.String)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		x, pat := cast[0].(*array.String), cast[1].(*array.String)
		var esc *array.String
		if len(cast) == 3 {
			esc = cast[2].(*array.String)
		}
		var (
			compiled   []likeToken
			segments   *likeSegments // compiled as segments, nil when it has no such form
			lastPat    string
			lastEsc    rune
			haveCached bool
		)
		return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
			if x.IsNull(i) || pat.IsNull(i) || (esc != nil && esc.IsNull(i)) {
				return false, false, nil
			}
			escape := '\\'
			if esc != nil {
				e := esc.Value(i)
				switch utf8.RuneCountInString(e) {
				case 0:
					escape = -1
				case 1:
					escape, _ = utf8.DecodeRuneInString(e)
				default:
					return false, false, errs.Invalidf("LIKE escape %q must be one character", e)
				}
			}
			p := pat.Value(i)
			if !haveCached || p != lastPat || escape != lastEsc {
				compiled, lastPat, lastEsc, haveCached = compileLike(p, escape), p, escape, true
				segments = nil
				if seg, ok := likeSegmentsOf(compiled); ok {
					segments = seg
				}
			}
			if segments != nil {
				return segments.match(x.Value(i)), true, nil
			}
			return matchLike(x.Value(i), compiled), true, nil
		})
	}
	return k, boolType, nil
}

type likeKind uint8

const (
	likeLiteral likeKind = iota
	likeAnyOne
	likeAnySeq
)

// likeToken is one element of a compiled LIKE pattern.
type likeToken struct {
	kind likeKind
	r    rune
}

// compileLike turns a pattern into tokens; escape < 0 means no escape character.
func compileLike(p string, escape rune) []likeToken {
	toks := make([]likeToken, 0, len(p))
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		switch {
		case r == escape && escape >= 0 && i < len(p):
			r, size = utf8.DecodeRuneInString(p[i:])
			i += size
			toks = append(toks, likeToken{kind: likeLiteral, r: r})
		case r == '%':
			if len(toks) == 0 || toks[len(toks)-1].kind != likeAnySeq {
				toks = append(toks, likeToken{kind: likeAnySeq})
			}
		case r == '_':
			toks = append(toks, likeToken{kind: likeAnyOne})
		default:
			toks = append(toks, likeToken{kind: likeLiteral, r: r})
		}
	}
	return toks
}

// matchLike reports whether s matches the compiled pattern, backtracking only to the last %.
func matchLike(s string, toks []likeToken) bool {
	si, ti := 0, 0
	starTi, starSi := -1, 0
	for si < len(s) {
		r, size := utf8.DecodeRuneInString(s[si:])
		if ti < len(toks) {
			switch t := toks[ti]; t.kind {
			case likeAnySeq:
				starTi, starSi = ti, si
				ti++
				continue
			case likeAnyOne:
				si += size
				ti++
				continue
			default:
				if r == t.r {
					si += size
					ti++
					continue
				}
			}
		}
		if starTi < 0 {
			return false
		}
		_, skip := utf8.DecodeRuneInString(s[starSi:])
		starSi += skip
		si, ti = starSi, starTi+1
	}
	for ti < len(toks) && toks[ti].kind == likeAnySeq {
		ti++
	}
	return ti == len(toks)
}
