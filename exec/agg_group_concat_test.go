package exec

import "testing"

func TestCutUTF8KeepsWholeCharacters(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 4, "abcd"},
		{"aé", 2, "a"}, // é is two bytes: not split
		{"aé", 3, "aé"},
		{"€€", 4, "€"},
	} {
		if got := string(cutUTF8([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
