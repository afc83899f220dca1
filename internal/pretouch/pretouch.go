// Package pretouch faults in the Go heap's next pages on the idle core
// while a nexa agent process starts, so that the run's first allocations
// do not stop to fault them in one by one.
//
// A fresh process takes each new page of its heap with a page fault the
// first time it writes to it; on this project's benchmark machine (a
// virtual machine) one costs about 7 µs, and a resume of a long run
// writes a few megabytes of new heap while it reads the run, on the
// critical path. Meanwhile the packages nexa links initialise on one core
// for about 20 ms, and the other core is idle. The Go runtime maps its
// heap in 4 MiB steps and hands out its pages from the lowest address up,
// so the pages above the newest allocation in the heap's current mapping
// are the ones the next allocations will write. This package's init asks
// the kernel to fault them in at once (madvise MADV_POPULATE_WRITE, Linux
// 5.14 and later), on its own goroutine, when the command is nexa agent.
// The Java VM's -XX:+AlwaysPreTouch does the same for its whole heap.
//
// It changes no memory the program can see: the pages are fresh and stay
// zero, and a page already in use is left as it is. What it costs is the
// resident memory of the pages touched (at most the mapping's 4 MiB) and
// the idle core's time. Where the call is not supported (a kernel before
// 5.14, a system other than Linux), nothing happens.
package pretouch

import "bytes"

// wanted reports whether a command line (without the program's name) is
// one whose process writes more new heap than its start-up: nexa agent,
// which compiles a program and starts or resumes a run.
func wanted(args []string) bool {
	return len(args) > 0 && args[0] == "agent"
}

// mappingEnd finds, in the text of /proc/self/maps, the mapping that holds
// address at and returns its end.
func mappingEnd(maps []byte, at uintptr) (uintptr, bool) {
	for len(maps) > 0 {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		lo, n := parseHex(line)
		if n == 0 || n >= len(line) || line[n] != '-' {
			continue
		}
		hi, m := parseHex(line[n+1:])
		if m == 0 {
			continue
		}
		if lo <= at && at < hi {
			return hi, true
		}
	}
	return 0, false
}

// parseHex reads the hexadecimal number at the start of b, and how many
// bytes it took.
func parseHex(b []byte) (uintptr, int) {
	var v uintptr
	for i, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return v, i
		}
	}
	return v, len(b)
}
