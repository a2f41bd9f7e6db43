package exec

import (
	"strings"
	"unicode/utf8"
)

// String functions by MySQL name. Positions and lengths count characters (UTF-8 code points)
// except LENGTH, which counts bytes; positions are 1-based. Numbers given as text are formatted
// as CAST(… AS CHAR) would.

// maxStringResult bounds the string results of REPEAT, SPACE, LPAD / RPAD, CONCAT / CONCAT_WS
// and REPLACE; larger ones are NULL, as MySQL returns NULL beyond max_allowed_packet (64 MiB by
// default in MySQL 8). See func_string_limits.go.
const maxStringResult = 64 << 20

func init() {
	s1 := func(name string) stringSig { return stringSig{name: name, kinds: "s"} }
	text := func(sig stringSig, f func(r *stringRow) (string, bool)) {
		RegisterScalar(sig.name, resolveTextFunc(sig, f))
	}
	integer := func(sig stringSig, f func(r *stringRow) int64) {
		RegisterScalar(sig.name, resolveIntStringFunc(sig, f))
	}

	integer(s1("length"), func(r *stringRow) int64 { return int64(len(r.str[0])) })
	for _, name := range []string{"char_length", "character_length"} {
		integer(s1(name), func(r *stringRow) int64 { return int64(utf8.RuneCountInString(r.str[0])) })
	}
	for _, name := range []string{"lower", "lcase"} {
		text(s1(name), func(r *stringRow) (string, bool) { return strings.ToLower(r.str[0]), true })
	}
	for _, name := range []string{"upper", "ucase"} {
		text(s1(name), func(r *stringRow) (string, bool) { return strings.ToUpper(r.str[0]), true })
	}
	text(stringSig{name: "concat", kinds: "s", variadic: true}, func(r *stringRow) (string, bool) {
		return joinStrings(r, r.str, "")
	})
	text(stringSig{name: "concat_ws", kinds: "ss", variadic: true, skipNulls: true}, func(r *stringRow) (string, bool) {
		parts := make([]string, 0, len(r.str)-1)
		for j := 1; j < len(r.str); j++ {
			if !r.null[j] {
				parts = append(parts, r.str[j])
			}
		}
		return joinStrings(r, parts, r.str[0])
	})
	for _, name := range []string{"substring", "substr", "mid"} {
		text(stringSig{name: name, kinds: "sii", optional: 1}, func(r *stringRow) (string, bool) {
			length := int64(-1)
			if len(r.num) == 3 {
				length = r.num[2]
				if length < 1 {
					return "", true
				}
			}
			return substring(r.str[0], r.num[1], length), true
		})
	}
	text(stringSig{name: "left", kinds: "si"}, func(r *stringRow) (string, bool) {
		return leftChars(r.str[0], r.num[1]), true
	})
	text(stringSig{name: "right", kinds: "si"}, func(r *stringRow) (string, bool) {
		s, n := r.str[0], r.num[1]
		if n <= 0 {
			return "", true
		}
		count := int64(utf8.RuneCountInString(s))
		if n >= count {
			return s, true
		}
		return substring(s, count-n+1, -1), true
	})
	text(stringSig{name: "trim", kinds: "ss", optional: 1}, func(r *stringRow) (string, bool) {
		cut := trimCut(r)
		return trimRight(trimLeft(r.str[0], cut), cut), true
	})
	// LTRIM / RTRIM take a second argument for TRIM(LEADING|TRAILING remstr FROM s).
	text(stringSig{name: "ltrim", kinds: "ss", optional: 1}, func(r *stringRow) (string, bool) {
		return trimLeft(r.str[0], trimCut(r)), true
	})
	text(stringSig{name: "rtrim", kinds: "ss", optional: 1}, func(r *stringRow) (string, bool) {
		return trimRight(r.str[0], trimCut(r)), true
	})
	text(stringSig{name: "replace", kinds: "sss"}, func(r *stringRow) (string, bool) {
		return replaceAll(r, r.str[0], r.str[1], r.str[2])
	})
	text(s1("reverse"), func(r *stringRow) (string, bool) { return reverseChars(r.str[0]), true })
	text(stringSig{name: "repeat", kinds: "si"}, func(r *stringRow) (string, bool) { return repeatString(r, r.str[0], r.num[1]) })
	text(stringSig{name: "space", kinds: "i"}, func(r *stringRow) (string, bool) { return repeatString(r, " ", r.num[0]) })
	text(stringSig{name: "lpad", kinds: "sis"}, func(r *stringRow) (string, bool) { return pad(r, r.str[0], r.num[1], r.str[2], true) })
	text(stringSig{name: "rpad", kinds: "sis"}, func(r *stringRow) (string, bool) { return pad(r, r.str[0], r.num[1], r.str[2], false) })
	integer(stringSig{name: "instr", kinds: "ss"}, func(r *stringRow) int64 { return locate(r.str[1], r.str[0], 1) })
	integer(stringSig{name: "locate", kinds: "ssi", optional: 1}, func(r *stringRow) int64 {
		from := int64(1)
		if len(r.num) == 3 {
			from = r.num[2]
		}
		return locate(r.str[0], r.str[1], from)
	})
	// STRCMP orders as the binary collation does: by bytes, which is code point order in UTF-8.
	integer(stringSig{name: "strcmp", kinds: "ss"}, func(r *stringRow) int64 { return int64(strings.Compare(r.str[0], r.str[1])) })
	integer(s1("ascii"), func(r *stringRow) int64 {
		if r.str[0] == "" {
			return 0
		}
		return int64(r.str[0][0])
	})
}

// substring returns up to length characters of s from 1-based position pos (negative: counted
// from the end); length < 0 means to the end. Position 0 or beyond the end gives "".
func substring(s string, pos, length int64) string {
	count := int64(utf8.RuneCountInString(s))
	switch {
	case pos == 0 || pos > count || pos < -count: // not -pos > count: -math.MinInt64 is negative
		return ""
	case pos < 0:
		pos = count + pos + 1
	}
	start := byteOffset(s, pos-1)
	rest := s[start:]
	if length < 0 {
		return rest
	}
	return rest[:byteOffset(rest, length)]
}

// byteOffset returns the byte offset of character n of s (len(s) when s is shorter).
func byteOffset(s string, n int64) int {
	if n <= 0 {
		return 0
	}
	var seen int64
	for i := range s {
		if seen == n {
			return i
		}
		seen++
	}
	return len(s)
}

func leftChars(s string, n int64) string {
	if n <= 0 {
		return ""
	}
	return s[:byteOffset(s, n)]
}

// trimCut is the string TRIM removes: the second argument, or a space.
func trimCut(r *stringRow) string {
	if len(r.str) == 2 {
		return r.str[1]
	}
	return " "
}

// trimLeft and trimRight remove repeated whole occurrences of cut (not a set of characters).
func trimLeft(s, cut string) string {
	if cut == "" {
		return s
	}
	for strings.HasPrefix(s, cut) {
		s = s[len(cut):]
	}
	return s
}

func trimRight(s, cut string) string {
	if cut == "" {
		return s
	}
	for strings.HasSuffix(s, cut) {
		s = s[:len(s)-len(cut)]
	}
	return s
}

func reverseChars(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// locate returns the 1-based character position of the first occurrence of sub in s at or after
// character position from, matching characters exactly (as every string comparison does); 0 when
// there is none.
func locate(sub, s string, from int64) int64 {
	if from < 1 || from > int64(utf8.RuneCountInString(s))+1 {
		return 0
	}
	start := byteOffset(s, from-1)
	hay, needle := s[start:], sub
	at := strings.Index(hay, needle)
	if at < 0 {
		return 0
	}
	return from + int64(utf8.RuneCountInString(hay[:at]))
}
