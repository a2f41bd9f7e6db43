package sql

import (
	"os"
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	qs := os.Getenv("Q")
	if qs == "" {
		t.Skip()
	}
	for _, q := range strings.Split(qs, ";") {
		t.Log(q + "\n" + bindQuery(t, q))
	}
}
