package slt

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// Summary totals a run.
type Summary struct {
	Engine string `json:"engine"`
	// Started is when the run began, RFC 3339 in UTC.
	Started string       `json:"started"`
	Seconds float64      `json:"seconds"`
	Files   []FileResult `json:"files"`
	OK      int          `json:"ok"`
	Fail    int          `json:"fail"`
	Skip    int          `json:"skip"`
	// PassPercent is OK / (OK + Fail) × 100: records that ran and passed, out of records that
	// ran. Skipped records do not count either way. 100 when nothing ran.
	PassPercent float64 `json:"pass_percent"`
}

// Summarize totals file results.
func Summarize(engine string, started time.Time, files []FileResult) Summary {
	s := Summary{Engine: engine, Started: started.UTC().Format(time.RFC3339), Seconds: time.Since(started).Seconds(), Files: files}
	for _, f := range files {
		s.OK += f.OK
		s.Fail += f.Fail
		s.Skip += f.Skip
	}
	s.PassPercent = PassPercent(s.OK, s.Fail)
	return s
}

// PassPercent is ok / (ok + fail) × 100, or 100 when both are zero.
func PassPercent(ok, fail int) float64 {
	if ok+fail == 0 {
		return 100
	}
	return 100 * float64(ok) / float64(ok+fail)
}

// FileLine is the one-line report of a file: `NAME  ok N fail N skip N  (SECONDS s)`, plus the
// file-level error's first line when there was one.
func FileLine(f FileResult) string {
	line := fmt.Sprintf("%-45s ok %6d  fail %6d  skip %6d  (%.1fs)", f.File, f.OK, f.Fail, f.Skip, f.Seconds)
	if f.Error != "" {
		first, _, _ := strings.Cut(f.Error, "\n")
		line += "  error: " + first
	}
	return line
}

// TotalLines are the closing lines of a report: totals and the pass percentage.
func TotalLines(s Summary) string {
	return fmt.Sprintf("%-45s ok %6d  fail %6d  skip %6d  (%.1fs)\npass rate: %.2f%% (%d of %d records that ran, %d files, engine %s)\n",
		"total", s.OK, s.Fail, s.Skip, s.Seconds, s.PassPercent, s.OK, s.OK+s.Fail, len(s.Files), s.Engine)
}

// WriteText writes the full text report: one line per file, then the totals.
func WriteText(w io.Writer, s Summary) error {
	var b strings.Builder
	for _, f := range s.Files {
		b.WriteString(FileLine(f))
		b.WriteByte('\n')
	}
	b.WriteString(TotalLines(s))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteResults writes the report as base.txt and base.json (an extension on base is dropped).
func WriteResults(base string, s Summary) error {
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".txt"), ".json")
	var text strings.Builder
	if err := WriteText(&text, s); err != nil {
		return err
	}
	if err := os.WriteFile(base+".txt", []byte(text.String()), 0o644); err != nil {
		return errs.Internalf("writing %s.txt: %v", base, err)
	}
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return errs.Internalf("encoding results: %v", err)
	}
	if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
		return errs.Internalf("writing %s.json: %v", base, err)
	}
	return nil
}

// WriteFailures writes every failure for triage: location, SQL, expected, and what came back.
func WriteFailures(w io.Writer, files []FileResult) error {
	var b strings.Builder
	for _, f := range files {
		for _, fl := range f.Failures {
			fmt.Fprintf(&b, "=== %s:%d\n", fl.File, fl.Line)
			if fl.SQL != "" {
				fmt.Fprintf(&b, "--- sql\n%s\n", fl.SQL)
			}
			fmt.Fprintf(&b, "--- expected\n%s\n", fl.Expected)
			if fl.Got != "" {
				fmt.Fprintf(&b, "--- got\n%s\n", fl.Got)
			}
			if fl.Error != "" {
				fmt.Fprintf(&b, "--- error\n%s\n", fl.Error)
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
