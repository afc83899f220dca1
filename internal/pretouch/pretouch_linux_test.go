//go:build linux

package pretouch

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// TestTouchMakesTheNextHeapPagesResident: after touch, every page of the
// range it names is resident (mincore), without a write from Go.
func TestTouchMakesTheNextHeapPagesResident(t *testing.T) {
	start, end := touch()
	if start == end {
		t.Skip("the kernel refused MADV_POPULATE_WRITE (Linux before 5.14?), or the heap mapping was not found")
	}
	page := uintptr(os.Getpagesize())
	if start%page != 0 || end <= start {
		t.Fatalf("range %#x-%#x", start, end)
	}
	vec := make([]byte, (end-start)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of %d (%#x) is not resident after touch", i, len(vec), start+uintptr(i)*page)
		}
	}
	t.Logf("%d KiB touched", (end-start)>>10)
}
