package auth

import (
	"strings"
	"testing"
)

func TestServiceToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-service"
	s, err := NewServiceToken(token, Reader)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := s.Match(token); !ok || p.User != ServiceUser || p.Role != Reader {
		t.Errorf("Match(token) = %+v, %v", p, ok)
	}
	for _, other := range []string{"", token[:len(token)-1], token + "x", strings.ToUpper(token)} {
		if _, ok := s.Match(other); ok {
			t.Errorf("Match(%q) accepted", other)
		}
	}
	for name, bad := range map[string]string{"short": "abc", "a space": token[:10] + " " + token[10:], "a newline": token + "\n", "non-ASCII": token + "é"} {
		_, err := NewServiceToken(bad, Reader)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), bad) {
			t.Errorf("%s: the error quotes the token", name)
		}
	}
	if _, err := NewServiceToken(token, 0); err == nil {
		t.Error("no role accepted")
	}
}
