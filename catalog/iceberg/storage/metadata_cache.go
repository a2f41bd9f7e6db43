package storage

import (
	"bytes"
	"container/list"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"
)

// Iceberg never rewrites a metadata file: every table change writes a new metadata.json,
// manifest list and manifests under new names in the table's metadata/ directory. So the FS
// keeps recently read metadata files whole, by store and URI, and a later Open, Stat or ReadFile
// of the same file costs no request. Planning the same table again (a reused dataset, a
// distributed query planned on every data node, the next query of an analyst) then reads
// nothing but what changed. Data files are not cached here: they are large and read by range.

// metadataCacheBytes bounds the cached metadata files, by size; metadataFileMax bounds one.
const (
	metadataCacheBytes = 128 << 20
	metadataFileMax    = 16 << 20
)

// isImmutableMetadata reports whether key names a file of an Iceberg table's metadata directory
// that is written once: a metadata.json or an Avro manifest list or manifest. A Hadoop
// catalog's version-hint.text is rewritten in place and is not one of them.
func isImmutableMetadata(key string) bool {
	dir, name := path.Split(key)
	if !strings.HasSuffix(dir, "metadata/") {
		return false
	}
	return strings.HasSuffix(name, ".metadata.json") || strings.HasSuffix(name, ".avro")
}

type metadataKey struct {
	store [32]byte // configKey of the store's Config: one bucket name may exist on two stores
	uri   string
}

type metadataEntry struct {
	key     metadataKey
	data    []byte
	modTime time.Time
}

// metadataFiles is the process-wide cache, least recently used evicted first.
var metadataFiles = struct {
	sync.Mutex
	byKey map[metadataKey]*list.Element
	lru   list.List // front = most recently used
	bytes int64
}{byKey: map[metadataKey]*list.Element{}}

func cachedMetadata(k metadataKey) (*metadataEntry, bool) {
	metadataFiles.Lock()
	defer metadataFiles.Unlock()
	el, ok := metadataFiles.byKey[k]
	if !ok {
		return nil, false
	}
	metadataFiles.lru.MoveToFront(el)
	return el.Value.(*metadataEntry), true
}

func keepMetadata(e *metadataEntry) {
	if len(e.data) > metadataFileMax {
		return
	}
	metadataFiles.Lock()
	defer metadataFiles.Unlock()
	if _, ok := metadataFiles.byKey[e.key]; ok {
		return
	}
	metadataFiles.byKey[e.key] = metadataFiles.lru.PushFront(e)
	metadataFiles.bytes += int64(len(e.data))
	for metadataFiles.bytes > metadataCacheBytes {
		old := metadataFiles.lru.Back()
		metadataFiles.lru.Remove(old)
		oe := old.Value.(*metadataEntry)
		delete(metadataFiles.byKey, oe.key)
		metadataFiles.bytes -= int64(len(oe.data))
	}
}

// metadataFile serves a cached metadata file from memory; it implements iceio.File.
type metadataFile struct {
	*bytes.Reader
	name    string
	modTime time.Time
}

func newMetadataFile(o object, e *metadataEntry) *metadataFile {
	return &metadataFile{Reader: bytes.NewReader(e.data), name: path.Base(o.key), modTime: e.modTime}
}

func (f *metadataFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: f.name, size: f.Size(), modTime: f.modTime}, nil
}

func (f *metadataFile) Close() error { return nil }
