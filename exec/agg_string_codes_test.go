package exec

import (
	"fmt"
	"testing"
)

// Codes are given in order of first appearance, stay the same as the table grows, tell values
// apart that differ only in length, a trailing zero byte or beyond the eighth byte, and are
// not given on lookups without insert.
func TestStringCodes(t *testing.T) {
	c := newStringCodes()
	var values []string
	for i := range 5000 {
		values = append(values, fmt.Sprintf("v%d", i), fmt.Sprintf("%012d", i), fmt.Sprintf("v%d\x00", i))
	}
	values = append(values, "", "\x00", "12345678", "123456789", "123456780")
	for round := range 2 {
		for i, v := range values {
			code, ok, added := c.code([]byte(v), true)
			if !ok || int(code) != i || (added > 0) != (round == 0) {
				t.Fatalf("round %d: %q got code %d (ok %v, added %d), want %d", round, v, code, ok, added, i)
			}
		}
	}
	if _, ok, _ := c.code([]byte("v5000"), false); ok {
		t.Fatal("a value never inserted has a code")
	}
	if c.len() != len(values) || len(c.slots) < 2*len(values) {
		t.Fatalf("%d codes in %d slots for %d values", c.len(), len(c.slots), len(values))
	}
}
