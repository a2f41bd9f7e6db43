package errs

import (
	"fmt"
	"unicode/utf8"
)

// CheckUTF8 returns nil when s is valid UTF-8, and otherwise the InvalidInput error MySQL gives
// for such a string ("Invalid utf8mb4 character string: 'FF41'", the bytes from the first
// invalid one, at most 8), with where (e.g. "parameter 2 of row 1") appended when not empty.
// Strings are checked where they enter the engine: Arrow strings must be UTF-8, and clients
// refuse results that are not.
func CheckUTF8(s, where string) error {
	if utf8.ValidString(s) {
		return nil
	}
	bad := s
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				bad = s[i:]
				break
			}
		}
	}
	msg := fmt.Sprintf("Invalid utf8mb4 character string: '%X'", bad[:min(len(bad), 8)])
	if where != "" {
		msg += " in " + where
	}
	return &Error{Category: InvalidInput, Msg: msg}
}
