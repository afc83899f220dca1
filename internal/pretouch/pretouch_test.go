package pretouch

import "testing"

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
