package pretouch

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"agent", "a.nx", "A", "task"}, true},
		{[]string{"agent", "a.nx", "A", "--resume", "run_1"}, true},
		{[]string{"version"}, false},
		{[]string{"runs", "list"}, false},
		{nil, false},
	} {
		if got := wanted(c.args); got != c.want {
			t.Errorf("wanted(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestMappingEnd(t *testing.T) {
	maps := []byte("00400000-01a72000 r-xp 00000000 08:01 12 /bin/nexa\n" +
		"c000000000-c000400000 rw-p 00000000 00:00 0 \n" +
		"c000400000-c004000000 ---p 00000000 00:00 0 \n" +
		"7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]")
	for _, c := range []struct {
		at   uintptr
		end  uintptr
		want bool
	}{
		{0xc000012345, 0xc000400000, true},
		{0xc0003fffff, 0xc000400000, true},
		{0xc000400000, 0xc004000000, true},
		{0x7ffd1800, 0x7ffd2000, true},
		{0x300000, 0, false},
	} {
		end, ok := mappingEnd(maps, c.at)
		if ok != c.want || end != c.end {
			t.Errorf("mappingEnd(%#x) = %#x, %v; want %#x, %v", c.at, end, ok, c.end, c.want)
		}
	}
}

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
