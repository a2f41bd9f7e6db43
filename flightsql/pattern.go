package flightsql

import "strings"

// matchPattern reports whether s matches a Flight SQL filter pattern: '%' matches any run of
// characters, '_' any one character, and '\' escapes the next character. Matching ignores case
// because catalog names do. A nil pattern matches everything.
func matchPattern(pattern *string, s string) bool {
	if pattern == nil {
		return true
	}
	return likeMatch([]rune(strings.ToLower(*pattern)), []rune(strings.ToLower(s)))
}

// likeMatch is an iterative matcher with backtracking to the last '%', linear in practice and
// never recursive, so a hostile pattern cannot exhaust the stack.
func likeMatch(p, s []rune) bool {
	pi, si := 0, 0
	starP, starS := -1, -1
	for si < len(s) {
		if pi < len(p) {
			switch {
			case p[pi] == '%':
				starP, starS = pi, si
				pi++
				continue
			case p[pi] == '\\' && pi+1 < len(p):
				if p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			case p[pi] == '_' || p[pi] == s[si]:
				pi++
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}
