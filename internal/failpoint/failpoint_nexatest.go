//go:build nexatest

package failpoint

import (
	"os"
	"strings"
	"sync"
	"syscall"
)

// Enabled is true: this test build kills the process at the points named by
// NEXA_TEST_FAILPOINT.
const Enabled = true

// envVar names the failpoints to trigger, comma-separated. Each entry is a
// point name, optionally followed by "@N" to trigger on the N-th hit only.
const envVar = "NEXA_TEST_FAILPOINT"

var (
	armed = parse(os.Getenv(envVar))
	mu    sync.Mutex // guards hits: tool calls may reach a point in parallel
	hits  = map[string]int{}
)

func parse(v string) map[string]int {
	if v == "" {
		return nil
	}
	m := map[string]int{}
	for _, p := range strings.Split(v, ",") {
		name, nth := p, 1
		if i := strings.IndexByte(p, '@'); i >= 0 {
			name = p[:i]
			n := 0
			for _, c := range p[i+1:] {
				if c < '0' || c > '9' {
					n = 0
					break
				}
				n = n*10 + int(c-'0')
			}
			if n > 0 {
				nth = n
			}
		}
		m[strings.TrimSpace(name)] = nth
	}
	return m
}

// Hit kills the process with SIGKILL, exactly as a crash or `kill -9`
// would, when the point is armed and reached for the configured time.
func Hit(name string) {
	if armed == nil {
		return
	}
	nth, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	hits[name]++
	now := hits[name]
	mu.Unlock()
	if now == nth {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously
	}
}
