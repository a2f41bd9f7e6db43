package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Table is one Iceberg table pinned to one snapshot: the current one when it was resolved, or
// the one its "@version" suffix named. It is immutable; every Scan reads that snapshot, whatever
// is committed to the table later.
type Table struct {
	cat   *Catalog
	name  string // "ns.tbl", with "@version" when pinned by a suffix
	ident table.Identifier
	tbl   *table.Table // the loaded table: its metadata is the pinned state
	pin   pin
	// schema is the Arrow form of pin.schema.
	schema *arrow.Schema

	ioOnce sync.Once
	io     iceio.IO
	ioErr  error
}

var _ catalog.Table = (*Table)(nil)

type pinKind int

const (
	// pinCurrent reads the loaded metadata's current snapshot with its current schema.
	pinCurrent pinKind = iota
	// pinSnapshot reads one snapshot (an id, a timestamp or a tag) with that snapshot's schema.
	pinSnapshot
	// pinBranch reads a branch's head with the table's current schema, as Iceberg specifies for
	// branch reads.
	pinBranch
)

type pin struct {
	kind   pinKind
	snap   *table.Snapshot // nil when the table has no snapshot yet
	ref    string          // the branch, for pinBranch
	schema *iceberg.Schema
}

// Table returns the named table ("ns.tbl" or "tbl" in the default namespace, optionally with
// an "@version" suffix: a snapshot id, a timestamp, or a branch or tag name), pinned to one
// snapshot. Names are matched exactly first, then case-insensitively.
func (c *Catalog) Table(ctx context.Context, name string) (catalog.Table, error) {
	base, version := name, ""
	if i := strings.LastIndexByte(name, '@'); i >= 0 {
		base, version = name[:i], name[i+1:]
		if version == "" {
			return nil, errs.Invalidf("iceberg catalog %s: table name %q ends in '@' without a version", c.cfg.Name, name)
		}
	}
	var (
		it  *table.Table
		err error
	)
	display := ""
	if loc, ok := catalog.ParseLocationTableName(base); ok {
		it, err = c.loadLocation(ctx, loc)
		display = loc
	} else {
		ns, tbl := splitName(base, c.defNS)
		if ns == "" || tbl == "" {
			return nil, errs.NotFoundf("iceberg catalog %s has no table '%s'", c.cfg.Name, name)
		}
		it, err = c.loadTable(ctx, ns, tbl)
	}
	if err != nil {
		// A lookup cut short by its statement's end (a timeout, a cancel) fails as that, not
		// as a missing table or an unreachable catalog.
		if stopped := stream.Stopped(ctx); stopped != nil {
			return nil, stopped
		}
		return nil, err
	}
	ident := it.Identifier()
	if display == "" {
		display = strings.Join(ident, ".")
	}
	t := &Table{cat: c, ident: ident, tbl: it, name: display}
	if version != "" {
		t.name += "@" + version
	}
	if t.pin, err = resolveVersion(it.Metadata(), version); err != nil {
		return nil, t.versionErr(version, err)
	}
	if t.schema, err = arrowSchema(t.pin.schema); err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.qualified(), err)
	}
	return t, nil
}

// Name is "ns.tbl" as the catalog spells it, with the "@version" suffix it was resolved with.
func (t *Table) Name() string { return t.name }

// Schema is the Arrow schema of the pinned snapshot.
func (t *Table) Schema() *arrow.Schema { return t.schema }

// SnapshotID is the pinned snapshot's id, 0 when the table has no snapshot.
func (t *Table) SnapshotID() int64 {
	if t.pin.snap == nil {
		return 0
	}
	return t.pin.snap.SnapshotID
}

// MetadataLocation is the metadata.json the table was loaded from.
func (t *Table) MetadataLocation() string { return t.tbl.MetadataLocation() }

// qualified names the table for messages: catalog.ns.tbl.
func (t *Table) qualified() string { return t.cat.cfg.Name + "." + strings.Join(t.ident, ".") }

// fs returns the table's IO, built once. It is the IO the catalog set up for the table
// (properties vended by a REST catalog included).
func (t *Table) fs(ctx context.Context) (iceio.IO, error) {
	t.ioOnce.Do(func() { t.io, t.ioErr = t.tbl.FS(ctx) })
	return t.io, t.ioErr
}

// loadTable loads ns.tbl, matching names case-insensitively when there is no exact match.
func (c *Catalog) loadTable(ctx context.Context, ns, tbl string) (*table.Table, error) {
	if c.cfg.Type == TypeFiles {
		return c.loadFileTable(ctx, ns, tbl)
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	ident := append(splitNamespace(ns), tbl)
	it, err := conn.LoadTable(ctx, ident)
	if err == nil {
		return it, nil
	}
	if !errors.Is(err, icecat.ErrNoSuchTable) && !errors.Is(err, icecat.ErrNoSuchNamespace) {
		return nil, c.loadErr(ns+"."+tbl, "", err)
	}
	// Case-insensitive fallback among the listed tables.
	nsIdent := splitNamespace(ns)
	ids, lerr := c.listTables(ctx, nsIdent)
	if errors.Is(lerr, icecat.ErrNoSuchNamespace) {
		if nsIdent, lerr = c.findNamespace(ctx, ns); lerr == nil {
			ids, lerr = c.listTables(ctx, nsIdent)
		}
	}
	if lerr != nil {
		if errs.CategoryOf(lerr) == errs.NotFound {
			return nil, c.noTable(ns, tbl)
		}
		return nil, lerr
	}
	var match []table.Identifier
	for _, id := range ids {
		if strings.EqualFold(id[len(id)-1], tbl) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return nil, c.noTable(ns, tbl)
	case 1:
	default:
		return nil, errs.Invalidf("iceberg catalog %s: table name '%s.%s' is ambiguous: %s and %s differ only in case",
			c.cfg.Name, ns, tbl, strings.Join(match[0], "."), strings.Join(match[1], "."))
	}
	it, err = conn.LoadTable(ctx, match[0])
	if err != nil {
		return nil, c.loadErr(strings.Join(match[0], "."), "", err)
	}
	return it, nil
}

// loadLocation opens the table whose metadata file is at location (a table given by its
// metadata location, catalog.LocationTableName), reading it with this catalog's storage
// settings.
func (c *Catalog) loadLocation(ctx context.Context, location string) (*table.Table, error) {
	if !strings.HasSuffix(location, ".metadata.json") {
		return nil, errs.Invalidf("iceberg catalog %s: %s is not an Iceberg metadata file (a path ending in .metadata.json)", c.cfg.Name, location)
	}
	if err := c.checkLocation(location); err != nil {
		return nil, err
	}
	ident := table.Identifier{"location", path.Base(location)}
	it, err := table.NewFromLocation(ctx, ident, location, iceio.LoadFSFunc(c.props, location), nil)
	if err != nil {
		return nil, c.loadErr(location, location, err)
	}
	return it, nil
}

func (c *Catalog) loadFileTable(ctx context.Context, ns, tbl string) (*table.Table, error) {
	var f *fileTable
	for i := range c.files {
		if c.files[i].ns == ns && c.files[i].name == tbl {
			f = &c.files[i]
			break
		}
	}
	if f == nil {
		for i := range c.files {
			if strings.EqualFold(c.files[i].ns, ns) && strings.EqualFold(c.files[i].name, tbl) {
				f = &c.files[i]
				break
			}
		}
	}
	if f == nil {
		return nil, c.noTable(ns, tbl)
	}
	ident := append(splitNamespace(f.ns), f.name)
	it, err := table.NewFromLocation(ctx, ident, f.location, iceio.LoadFSFunc(c.props, f.location), nil)
	if err != nil {
		return nil, c.loadErr(f.ns+"."+f.name, f.location, err)
	}
	return it, nil
}

func (c *Catalog) noTable(ns, tbl string) error {
	return &errs.Error{Category: errs.NotFound,
		Msg: fmt.Sprintf("Table '%s.%s.%s' doesn't exist", c.cfg.Name, ns, tbl), Err: icecat.ErrNoSuchTable}
}

// loadErr reports a table that could not be loaded; a missing metadata file is NotFound.
func (c *Catalog) loadErr(name, location string, err error) error {
	what := fmt.Sprintf("iceberg catalog %s: table %s", c.cfg.Name, name)
	if location != "" {
		what += ": metadata " + location
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.scrub(&errs.Error{Category: errs.NotFound, Msg: what + " does not exist", Err: err})
	case errors.Is(err, icecat.ErrNoSuchTable), errors.Is(err, icecat.ErrNoSuchNamespace):
		return c.scrub(&errs.Error{Category: errs.NotFound, Msg: what + " does not exist", Err: err})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &errs.Error{Category: errs.Canceled, Msg: what + ": loading canceled", Err: err}
	case errs.CategoryOf(err) != errs.Internal:
		return c.scrub(&errs.Error{Category: errs.CategoryOf(err), Msg: what + ": cannot load", Err: err})
	}
	return c.scrub(&errs.Error{Category: errs.Internal, Msg: what + ": cannot load", Err: err})
}

// errVersion marks a version that names nothing.
var errVersion = errors.New("no such version")

func (t *Table) versionErr(version string, err error) error {
	if errors.Is(err, errVersion) {
		return &errs.Error{Category: errs.NotFound,
			Msg: fmt.Sprintf("iceberg table %s has no version '%s'", t.qualified(), version), Err: err}
	}
	return &errs.Error{Category: errs.Internal,
		Msg: fmt.Sprintf("iceberg table %s: version '%s'", t.qualified(), version), Err: err}
}

// timestampLayouts are the timestamp spellings a version suffix may use; all but RFC 3339 are
// read as UTC.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timestampLayouts {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts, true
		}
	}
	return time.Time{}, false
}

// resolveVersion pins meta to the state version names ("" = the current snapshot). Digits are
// a snapshot id; a timestamp selects the snapshot that was current then; anything else is a
// branch or tag. An existing branch or tag of exactly that name wins over the other readings.
func resolveVersion(meta table.Metadata, version string) (pin, error) {
	if version == "" {
		return pin{kind: pinCurrent, snap: meta.CurrentSnapshot(), schema: meta.CurrentSchema()}, nil
	}
	allDigits := strings.Trim(version, "0123456789") == ""
	if allDigits {
		if id, err := strconv.ParseInt(version, 10, 64); err == nil {
			if snap := meta.SnapshotByID(id); snap != nil {
				return snapshotPin(meta, snap)
			}
		}
	}
	if p, ok, err := refPin(meta, version); ok || err != nil {
		return p, err
	}
	if !allDigits {
		if ts, ok := parseTimestamp(version); ok {
			snap := snapshotAsOf(meta, ts.UnixMilli())
			if snap == nil {
				return pin{}, fmt.Errorf("%w: no snapshot was current at %s", errVersion, ts.UTC().Format(time.RFC3339Nano))
			}
			return snapshotPin(meta, snap)
		}
	}
	if allDigits {
		return pin{}, fmt.Errorf("%w: no snapshot %s", errVersion, version)
	}
	return pin{}, fmt.Errorf("%w: no branch or tag %s", errVersion, version)
}

func snapshotPin(meta table.Metadata, snap *table.Snapshot) (pin, error) {
	p := pin{kind: pinSnapshot, snap: snap, schema: meta.CurrentSchema()}
	if snap.SchemaID != nil {
		p.schema = nil
		for _, s := range meta.Schemas() {
			if s.ID == *snap.SchemaID {
				p.schema = s
				break
			}
		}
		if p.schema == nil {
			return pin{}, fmt.Errorf("snapshot %d references schema %d, which the metadata lacks", snap.SnapshotID, *snap.SchemaID)
		}
	}
	return p, nil
}

// refPin resolves a branch or tag, exactly or else case-insensitively when that is unique.
func refPin(meta table.Metadata, name string) (pin, bool, error) {
	var (
		found    string
		ref      table.SnapshotRef
		n        int
		exactHit bool
	)
	for refName, r := range meta.Refs() {
		if refName == name {
			found, ref, exactHit = refName, r, true
			break
		}
		if strings.EqualFold(refName, name) {
			found, ref = refName, r
			n++
		}
	}
	if !exactHit && n != 1 {
		return pin{}, false, nil
	}
	snap := meta.SnapshotByID(ref.SnapshotID)
	if snap == nil {
		return pin{}, true, fmt.Errorf("%w: %s %s points at snapshot %d, which the metadata lacks",
			errVersion, ref.SnapshotRefType, found, ref.SnapshotID)
	}
	if ref.SnapshotRefType == table.BranchRef {
		return pin{kind: pinBranch, snap: snap, ref: found, schema: meta.CurrentSchema()}, true, nil
	}
	p, err := snapshotPin(meta, snap)
	return p, true, err
}

// snapshotAsOf is the snapshot current at tsMs: the latest snapshot-log entry at or before it,
// or, for metadata without a log, the latest ancestor of the current snapshot at or before it.
func snapshotAsOf(meta table.Metadata, tsMs int64) *table.Snapshot {
	var (
		id, best int64
		found    bool
	)
	logged := false
	for e := range meta.SnapshotLogs() {
		logged = true
		if e.TimestampMs <= tsMs && (!found || e.TimestampMs >= best) {
			id, best, found = e.SnapshotID, e.TimestampMs, true
		}
	}
	if logged {
		if !found {
			return nil
		}
		return meta.SnapshotByID(id)
	}
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	for _, s := range table.AncestorsOf(cur.SnapshotID, meta.SnapshotByID) {
		if s.TimestampMs <= tsMs {
			return meta.SnapshotByID(s.SnapshotID)
		}
	}
	return nil
}

// Version is the suffix that resolves this table's pinned snapshot again (catalog.VersionedTable).
func (t *Table) Version() string {
	if id := t.SnapshotID(); id != 0 {
		return "@" + strconv.FormatInt(id, 10)
	}
	return ""
}
