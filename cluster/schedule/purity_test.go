package schedule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package comment promises a pure scheduler: no network, no goroutines, no locks, no clock
// reads. This test holds the code to it.
func TestSchedulerIsPure(t *testing.T) {
	allowed := map[string]bool{
		"cmp": true, "fmt": true, "maps": true, "slices": true, "strings": true, "sort": true, "time": true,
		"github.com/cachedb/cachedb/internal/errs": true, "github.com/cachedb/cachedb/exec": true,
	}
	// Of package time, only the types: a value of time is passed in, never read.
	timeTypes := map[string]bool{"Time": true, "Duration": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine", name)
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && !timeTypes[n.Sel.Name] {
					t.Errorf("%s uses time.%s", name, n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
