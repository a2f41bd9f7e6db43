package exec

import (
	"math/rand"
	"strings"
	"testing"
)

// TestLikeSegmentsMatchTheRuneMatcher checks that every pattern with a segment form matches
// exactly the strings the rune-by-rune matcher does, over random patterns and strings of a
// small alphabet (ASCII, multi-byte characters, invalid bytes, U+FFFD), with escapes.
func TestLikeSegmentsMatchTheRuneMatcher(t *testing.T) {
	alphabet := []string{"a", "b", "ab", "é", "€", "\xe2\x82", "\xff", "\uFFFD", "%", "_", "\\"}
	rng := rand.New(rand.NewSource(1))
	random := func(n int) string {
		var b strings.Builder
		for range rng.Intn(n) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return b.String()
	}
	fixed := []string{"", "%", "%%", "a", "%a", "a%", "%a%", "a%b", "%a%a%", "%ab%b%", "a%a%a", "%special%requests%", "%BRASS", "forest%", "a\\%b%"}
	segmented := 0
	for i := range 4000 {
		pat := random(7)
		if i < len(fixed) {
			pat = fixed[i]
		}
		toks := compileLike(pat, '\\')
		seg, ok := likeSegmentsOf(toks)
		if !ok {
			continue
		}
		segmented++
		for range 40 {
			s := random(9)
			if want, got := matchLike(s, toks), seg.match(s); got != want {
				t.Fatalf("%q LIKE %q: segments say %v, the rune matcher %v", s, pat, got, want)
			}
		}
	}
	if segmented < 500 {
		t.Fatalf("only %d of the patterns had a segment form", segmented)
	}
	if _, ok := likeSegmentsOf(compileLike("a_b", '\\')); ok {
		t.Error("a pattern with _ has a segment form")
	}
	if _, ok := likeSegmentsOf(compileLike("a\uFFFD%", '\\')); ok {
		t.Error("a pattern with U+FFFD has a segment form")
	}
}
