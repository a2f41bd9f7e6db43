//go:build !linux

package hugepage

// collapse does nothing where there is no MADV_COLLAPSE.
func collapse(uintptr) bool { return false }
