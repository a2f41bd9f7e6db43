package hugepage

import "golang.org/x/sys/unix"

// collapse backs the huge page at address at with a huge page (MADV_COLLAPSE), reporting
// whether it is so backed now.
func collapse(at uintptr) bool {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, at, Size, unix.MADV_COLLAPSE)
	return errno == 0
}
