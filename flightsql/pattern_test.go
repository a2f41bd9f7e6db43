package flightsql

import "testing"

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern string
		s       string
		want    bool
	}{
		{"%", "", true},
		{"%", "demo", true},
		{"demo", "DEMO", true},
		{"de%", "demo", true},
		{"%mo", "demo", true},
		{"d_mo", "demo", true},
		{"d_mo", "dmo", false},
		{"%e%o", "demo", true},
		{"a%b%c", "aXbYc", true},
		{"a%b%c", "aXbY", false},
		{`my\_t`, "my_t", true},
		{`my\_t`, "myXt", false},
		{"", "x", false},
		{"", "", true},
	}
	for _, tt := range tests {
		p := tt.pattern
		if got := matchPattern(&p, tt.s); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
	if !matchPattern(nil, "anything") {
		t.Error("nil pattern must match everything")
	}
}
