package mempool

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// DefaultFraction is the part of the memory a process may use (its cgroup's limit, else the
// host's memory) that the default limit reserves for what cachedb holds. The rest is slack for
// what the pool does not see: the Go runtime, gRPC and Parquet decode buffers, stacks.
const DefaultFraction = 0.6

// DefaultLimit is DefaultFraction of the memory this process may use: the cgroup v2 or v1 limit
// when one is set, else the host's total memory (0 when neither can be read: no limit).
func DefaultLimit() int64 {
	total := cgroupLimit()
	if total <= 0 {
		total = hostMemory()
	}
	return int64(float64(total) * DefaultFraction)
}

// cgroupLimit reads the memory limit of this process's cgroup (0: none or unknown).
func cgroupLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, ok := parseCgroupLimit(string(b)); ok {
			return n
		}
	}
	return 0
}

// parseCgroupLimit reads a cgroup memory limit file: a byte count, or "max" (cgroup v2) or a
// huge number (cgroup v1) for none.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}

// hostMemory reads MemTotal from /proc/meminfo (0 when it cannot).
func hostMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseMemTotal(bufio.NewScanner(f))
}

func parseMemTotal(sc *bufio.Scanner) int64 {
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// ParseBytes reads a size as flags give it: "256MiB", "1GiB", "512MB", "1073741824"; "0"
// means none.
func ParseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (examples: 256MiB, 4GiB, 1073741824): %w", s, err)
	}
	if n > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// FormatBytes writes n as ParseBytes reads it ("256 MiB").
func FormatBytes(n int64) string { return bytes(n) }
