package sql

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/planner"
)

// sltCorpus is the sqllogictest corpus the binder is measured against (absent on some
// machines: the sweep is skipped then).
const sltCorpus = "../../shared/slt/sqlite"

// sltRecord is one statement or query of a .test file.
type sltRecord struct {
	line      int
	sql       string
	wantError bool // "statement error"
}

// readSLT returns the records of a sqllogictest file that MySQL runs: records marked
// "skipif mysql", or "onlyif" another engine, are left out.
func readSLT(t *testing.T, path string) []sltRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("corpus not available: %v", err)
	}
	defer f.Close()
	var (
		out  []sltRecord
		cur  *sltRecord
		skip bool
		body bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if cur != nil && !skip {
				out = append(out, *cur)
			}
			cur, skip, body = nil, false, false
		case cur == nil && strings.HasPrefix(line, "skipif "):
			skip = skip || strings.Fields(line)[1] == "mysql"
		case cur == nil && strings.HasPrefix(line, "onlyif "):
			skip = skip || strings.Fields(line)[1] != "mysql"
		case cur == nil && (strings.HasPrefix(line, "statement ") || strings.HasPrefix(line, "query ")):
			cur = &sltRecord{line: n, wantError: strings.HasPrefix(line, "statement error")}
		case cur != nil && line == "----":
			body = true
		case cur != nil && !body:
			if cur.sql != "" {
				cur.sql += "\n"
			}
			cur.sql += line
		}
	}
	if cur != nil && !skip {
		out = append(out, *cur)
	}
	return out
}

// TestSLTSweep binds every statement and query of a few corpus files (executing their CREATE
// TABLE and DROP TABLE against a memory catalog) and reports what fails to bind.
func TestSLTSweep(t *testing.T) {
	files := []string{"select1.test", "select2.test", "random/groupby/slt_good_0.test"}
	if extra := os.Getenv("SLT_SWEEP_FILES"); extra != "" {
		files = strings.Split(extra, ",")
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			records := readSLT(t, filepath.Join(sltCorpus, name))
			failures := sweep(t, records)
			t.Logf("%s: %d records, %d failed to bind", name, len(records), failures)
		})
	}
}

// sweep binds records in order and returns how many that should bind did not.
func sweep(t *testing.T, records []sltRecord) int {
	ctx := context.Background()
	cat := memcat.NewCatalog("slt")
	reasons := map[string]int{}
	examples := map[string]string{}
	failures := 0
	for _, r := range records {
		stmt, err := Bind(ctx, r.sql, cat, nil)
		if err != nil {
			if r.wantError {
				continue
			}
			failures++
			reason := err.Error()
			if len(reason) > 100 {
				reason = reason[:100]
			}
			reasons[reason]++
			if _, ok := examples[reason]; !ok {
				examples[reason] = fmt.Sprintf("line %d: %s", r.line, r.sql)
			}
			continue
		}
		switch s := stmt.(type) {
		case *planner.CreateTable:
			if _, err := cat.CreateTable(ctx, s.Name, s.Schema, s.IfNotExists); err != nil {
				t.Logf("create %s: %v", s.Name, err)
			}
		case *planner.DropTable:
			for _, n := range s.Names {
				_ = cat.DropTable(ctx, n, s.IfExists)
			}
		}
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return reasons[keys[i]] > reasons[keys[j]] })
	for _, k := range keys {
		t.Logf("%5d  %s\n       e.g. %s", reasons[k], k, examples[k])
	}
	return failures
}
