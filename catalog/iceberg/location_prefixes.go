package iceberg

import (
	"path"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// Tables given by their metadata location (a job spec's metadata_location) are read only from
// where the catalog's tables live: under its warehouse, the directories of its `files` tables,
// or a prefix in Config.LocationPrefixes. Without that bound a client could load any
// *.metadata.json the server can read, and probe which files exist through the errors.

// locationPrefixes returns the normalized prefixes tables may be loaded by location from.
func (c *Catalog) locationPrefixes() []string {
	var out []string
	add := func(p string) {
		if n, ok := normalizeLocation(p); ok && n != "" {
			out = append(out, strings.TrimSuffix(n, "/")+"/")
		}
	}
	add(c.cfg.Warehouse)
	for _, f := range c.files {
		add(dirOf(f.location))
	}
	for _, p := range c.cfg.LocationPrefixes {
		add(p)
	}
	return out
}

// dirOf is the table directory of a metadata file: the parent of its metadata/ directory.
func dirOf(location string) string {
	dir := location[:strings.LastIndexByte(location, '/')+1]
	if strings.HasSuffix(dir, "/metadata/") {
		return strings.TrimSuffix(dir, "metadata/")
	}
	return dir
}

// checkLocation refuses a metadata location outside the catalog's prefixes.
func (c *Catalog) checkLocation(location string) error {
	n, ok := normalizeLocation(location)
	if !ok {
		return errs.Invalidf("iceberg catalog %s: %s is not a location a table can be read from (a path or URL without '..' segments)", c.cfg.Name, location)
	}
	for _, p := range c.locationPrefixes() {
		if strings.HasPrefix(n, p) {
			return nil
		}
	}
	return errs.Deniedf("iceberg catalog %s: %s is outside the locations it reads tables from by location (its warehouse, the directories of its tables and its location_prefixes)", c.cfg.Name, location)
}

// normalizeLocation makes locations comparable: file:// and plain paths alike, s3a:// as
// s3://, the path cleaned. A location with a ".." segment is refused (ok false): it could climb
// out of any prefix.
func normalizeLocation(loc string) (string, bool) {
	loc = strings.TrimSpace(loc)
	if loc == "" {
		return "", true
	}
	scheme, rest, hasScheme := strings.Cut(loc, "://")
	if !hasScheme {
		scheme, rest = "file", loc
	}
	scheme = strings.ToLower(scheme)
	if scheme == "s3a" || scheme == "s3n" {
		scheme = "s3"
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." {
			return "", false
		}
	}
	trailing := strings.HasSuffix(rest, "/")
	if scheme == "file" {
		rest = path.Clean("/" + strings.TrimPrefix(rest, "/"))
	} else {
		rest = path.Clean(rest)
	}
	if trailing && !strings.HasSuffix(rest, "/") {
		rest += "/"
	}
	return scheme + "://" + rest, true
}
