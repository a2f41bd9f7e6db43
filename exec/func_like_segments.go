package exec

import (
	"strings"
	"unicode/utf8"
)

// likeSegments is a LIKE pattern of literal text and % only (no _), matched by searching for
// its literal runs in order instead of rune by rune: a prefix, a suffix, and leftmost matches of
// the runs between. Byte search finds exactly the matches the rune matcher does when the literal
// text is valid UTF-8 without U+FFFD: a valid run starts with a lead or ASCII byte, so it can only
// match where a character of the string starts, and an invalid byte of the string (which the rune
// matcher reads as U+FFFD) matches no byte of it.
type likeSegments struct {
	parts []string // the literal runs, in order
	// start and end report that the pattern does not begin (end) with %: the first (last) run
	// is anchored there.
	start, end bool
}

// likeSegmentsOf returns the segment form of a compiled pattern, or false when it has _ or
// literal text the byte search cannot stand for.
func likeSegmentsOf(toks []likeToken) (*likeSegments, bool) {
	p := &likeSegments{start: true, end: true}
	var run []byte
	for i, t := range toks {
		switch t.kind {
		case likeAnyOne:
			return nil, false
		case likeAnySeq:
			if i == 0 {
				p.start = false
			}
			if i == len(toks)-1 {
				p.end = false
			}
			if len(run) > 0 {
				p.parts = append(p.parts, string(run))
				run = run[:0]
			}
		default:
			if t.r == utf8.RuneError || !utf8.ValidRune(t.r) {
				return nil, false
			}
			run = utf8.AppendRune(run, t.r)
		}
	}
	if len(run) > 0 {
		p.parts = append(p.parts, string(run))
	}
	return p, true
}

// match reports whether s matches the pattern.
func (p *likeSegments) match(s string) bool {
	parts := p.parts
	if len(parts) == 0 {
		return !(p.start && p.end) || s == "" // "" matches only ""; a pattern of % matches all
	}
	if p.start && p.end && len(parts) == 1 {
		return s == parts[0]
	}
	lo, hi := 0, len(s)
	if p.start {
		if !strings.HasPrefix(s, parts[0]) {
			return false
		}
		lo, parts = len(parts[0]), parts[1:]
	}
	if p.end {
		last := parts[len(parts)-1]
		if hi-lo < len(last) || !strings.HasSuffix(s, last) {
			return false
		}
		hi, parts = hi-len(last), parts[:len(parts)-1]
	}
	for _, part := range parts {
		i := strings.Index(s[lo:hi], part)
		if i < 0 {
			return false
		}
		lo += i + len(part)
	}
	return true
}
