//go:build !amd64

package gather

func fast32(dst, src []uint32, idx []int32) bool { return false }
func fast64(dst, src []uint64, idx []int32) bool { return false }
