package slt

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// TestFile is a test file to run: Path opens it, Name is how reports call it (the path
// relative to the test directory, with forward slashes).
type TestFile struct {
	Path string
	Name string
}

// testFileSuffixes are the extensions of test files; anything else (README.md) is ignored.
var testFileSuffixes = []string{".test", ".slt"}

// FindFiles lists the test files to run, sorted by name. Each selector is a file or directory,
// taken relative to root unless it exists as given; no selectors means all of root.
// Directories are walked recursively. A file is kept when it matches include (if set) and does
// not match exclude (if set); both are matched against its name. A selector that exists nowhere
// is a NotFound error, so a typo cannot turn a test run into a silent no-op.
func FindFiles(root string, selectors []string, include, exclude *regexp.Regexp) ([]TestFile, error) {
	if len(selectors) == 0 {
		selectors = []string{"."}
	}
	seen := map[string]bool{}
	var files []TestFile
	for _, sel := range selectors {
		path, info, err := resolveSelector(root, sel)
		if err != nil {
			return nil, err
		}
		add := func(p string) {
			name := displayName(root, p)
			if seen[name] || (include != nil && !include.MatchString(name)) || (exclude != nil && exclude.MatchString(name)) {
				return
			}
			seen[name] = true
			files = append(files, TestFile{Path: p, Name: name})
		}
		if !info.IsDir() {
			add(path)
			continue
		}
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isTestFile(p) {
				add(p)
			}
			return nil
		})
		if err != nil {
			return nil, errs.NotFoundf("walking %s: %v", path, err)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// resolveSelector finds sel as an absolute path, under root, or under the working directory,
// in that order.
func resolveSelector(root, sel string) (string, fs.FileInfo, error) {
	candidates := []string{sel}
	if !filepath.IsAbs(sel) {
		candidates = []string{filepath.Join(root, sel), sel}
	}
	for _, c := range candidates {
		if info, err := os.Stat(c); err == nil {
			return c, info, nil
		}
	}
	return "", nil, errs.NotFoundf("test file or directory %q not found (looked under %s and the working directory)", sel, root)
}

func isTestFile(path string) bool {
	for _, s := range testFileSuffixes {
		if strings.HasSuffix(path, s) {
			return true
		}
	}
	return false
}

// displayName is path relative to root when it lies inside root, else path as given.
func displayName(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}
