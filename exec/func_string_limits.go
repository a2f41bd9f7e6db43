package exec

import (
	"strings"
	"unicode/utf8"

	"github.com/cachedb/cachedb/internal/errs"
)

// Size limits of string results. Every size is compared against its limit before it is
// computed by a multiplication or allocated, so that no count a client sends can overflow the
// arithmetic or make the process allocate without bound.

// maxBatchStringBytes bounds the bytes that one expression whose size a client chooses with a
// count (REPEAT, SPACE, LPAD, RPAD) or one constant repeated on every row may produce for one
// batch (all its rows together). MySQL bounds each value (max_allowed_packet) but streams rows
// one at a time; the engine builds whole batches, for many partitions at once, so
// REPEAT(city, 1000000) over 8192-row batches would hold 8 GB per partition. Past this limit the
// statement fails with a ResourceExhausted error naming the function, before the batch is
// allocated. 64 MiB keeps a statement with tens of partitions under a few GB when it fails (a
// 256 MiB limit let a 30-partition REPEAT reach 5.7 GB first), and still admits a
// max_allowed_packet-sized value, or 8 KB on each of 8192 rows.
const maxBatchStringBytes = 64 << 20

// maxBatchTextBytes bounds the bytes of any string function for one batch, checked after each
// row. The other string functions' results are about as long as their arguments, which are
// already bounded; this keeps a batch's strings well below Arrow's 2 GiB of offsets.
const maxBatchTextBytes = 1 << 30

// batchTooLarge is the error of a string function whose results for one batch would pass limit;
// the function's call (exec's callExpr) prefixes its name.
func batchTooLarge(limit int64) error {
	return errs.Exhaustedf("the results for one batch of rows would pass %d bytes, the limit of one expression per batch; ask for fewer or shorter values", limit)
}

// admit reports whether a result of size bytes (at most maxStringResult) may be added to the
// results of this batch; when it may not, it records the error that fails the statement.
func (r *stringRow) admit(size int64) bool {
	if r.produced+size > maxBatchStringBytes {
		r.err = batchTooLarge(maxBatchStringBytes)
		return false
	}
	return true
}

// repeatString implements REPEAT: s n times; ” for n <= 0; NULL when the result would be longer
// than maxStringResult (MySQL: max_allowed_packet).
func repeatString(r *stringRow, s string, n int64) (string, bool) {
	if n <= 0 || s == "" {
		return "", true
	}
	if n > maxStringResult/int64(len(s)) {
		return "", false
	}
	if !r.admit(int64(len(s)) * n) {
		return "", false
	}
	return strings.Repeat(s, int(n)), true
}

// pad implements LPAD / RPAD: s cut or padded with repetitions of p to n characters. A negative
// n, or padding needed with an empty p, gives NULL, and so does a result longer than
// maxStringResult bytes. (MySQL estimates the length as n times 4 bytes for utf8mb4; the engine
// uses the exact length, so RPAD('x', 60000000, 'y') is the 60,000,000-byte string.)
func pad(r *stringRow, s string, n int64, p string, left bool) (string, bool) {
	count := int64(utf8.RuneCountInString(s))
	switch {
	case n < 0:
		return "", false
	case n <= count:
		return leftChars(s, n), true
	case p == "":
		return "", false
	}
	need := n - count
	pc := int64(utf8.RuneCountInString(p))
	whole, tail := need/pc, leftChars(p, need%pc)
	room := maxStringResult - int64(len(s)) - int64(len(tail))
	if room < 0 || whole > room/int64(len(p)) {
		return "", false
	}
	if !r.admit(int64(len(s)) + whole*int64(len(p)) + int64(len(tail))) {
		return "", false
	}
	fill := strings.Repeat(p, int(whole)) + tail
	if left {
		return fill + s, true
	}
	return s + fill, true
}

// joinStrings implements CONCAT and CONCAT_WS: parts joined by sep; NULL when the result would
// be longer than maxStringResult, as MySQL does past max_allowed_packet.
func joinStrings(r *stringRow, parts []string, sep string) (string, bool) {
	size := int64(len(sep)) * int64(max(len(parts)-1, 0))
	for _, p := range parts {
		size += int64(len(p))
	}
	if size > maxStringResult {
		return "", false
	}
	return strings.Join(parts, sep), true
}

// replaceAll implements REPLACE; NULL when the result would be longer than maxStringResult, as
// MySQL does past max_allowed_packet.
func replaceAll(r *stringRow, s, from, to string) (string, bool) {
	if from == "" {
		return s, true
	}
	// Each term is at most 2^31 (an Arrow string), so the product cannot overflow.
	size := int64(len(s)) + int64(strings.Count(s, from))*(int64(len(to))-int64(len(from)))
	if size > maxStringResult {
		return "", false
	}
	return strings.ReplaceAll(s, from, to), true
}
