//go:build linux

package pretouch

import (
	"os"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the range
// in, writable, as writes would.
const madvPopulateWrite = 23

func init() {
	if wanted(os.Args[1:]) {
		go touch()
	}
}

// marker is a heap object whose address says where the heap's next free
// pages begin.
var marker *[64]byte

// touch faults in the rest of the heap mapping that holds a new object,
// above that object's page, and returns the range it asked for (empty
// when it could not find the mapping or the kernel refused).
func touch() (start, end uintptr) {
	marker = new([64]byte)
	at := uintptr(unsafe.Pointer(marker))
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0
	}
	end, ok := mappingEnd(maps, at)
	if !ok {
		return 0, 0
	}
	page := uintptr(os.Getpagesize())
	start = (at + page) &^ (page - 1)
	if start >= end {
		return 0, 0
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite); errno != 0 {
		return 0, 0
	}
	return start, end
}
