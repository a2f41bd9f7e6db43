// Package deps checks that imports follow the layering of the design:
//
//	cmd/cachedb → flightsql → node → engine → sql → planner → exec → catalog
//	                            └──→ cluster ─────────────────────↗
//
// node (the data-node runtime: partition store, stages and shuffles, training reads) runs what
// engine plans; cluster (membership, placement, tickets) sits beside engine, below node.
//
// A package may import the layers below it, never those above it, and the heavy third-party
// libraries stay confined to the one package that owns them.
package deps

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cachedb/cachedb/"

// rank orders the layers: a package may import only packages of a lower rank (or its own
// top-level package, or internal/). Top-level directories not listed here (bench, tests) may
// import anything.
var rank = map[string]int{
	"catalog":   1,
	"exec":      2,
	"planner":   3,
	"sql":       4,
	"cluster":   4,
	"engine":    5,
	"node":      6,
	"flightsql": 7,
	"cmd":       8,
}

// confined maps a third-party import prefix to the only top-level package that may use it.
var confined = map[string]string{
	"vitess.io/vitess":             "sql",
	"github.com/apache/iceberg-go": "catalog/iceberg",
}

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		from := strings.SplitN(rel, "/", 2)[0]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for prefix, owner := range confined {
				if strings.HasPrefix(p, prefix) && !strings.HasPrefix(rel, owner+"/") {
					t.Errorf("%s imports %s, which only %s/ may import", rel, p, owner)
				}
			}
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := strings.SplitN(strings.TrimPrefix(p, module), "/", 2)[0]
			fromRank, ok := rank[from]
			if !ok || to == from || to == "internal" {
				continue
			}
			toRank, known := rank[to]
			if !known {
				t.Errorf("%s imports %s, which is not part of the engine's layers", rel, p)
				continue
			}
			if toRank >= fromRank {
				t.Errorf("%s (layer %s) imports %s (layer %s): imports must flow cmd → flightsql → node → engine → sql → planner → exec → catalog", rel, from, p, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files found: the walk is looking in the wrong place")
	}
}

func TestRepositoryRootFound(t *testing.T) {
	if _, err := os.Stat("../../go.mod"); err != nil {
		t.Fatalf("expected the module root two levels up: %v", err)
	}
}
