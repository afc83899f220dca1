package cli

import (
	"io"
	"os"
	"testing"
)

// countingWriter counts the writes that reach the terminal.
type countingWriter struct{ writes int }

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }

// BenchmarkRunsList runs `nexa runs list` in process (open the store, list,
// render, close) on the 50,000-run store BenchmarkList of internal/store
// keeps at NEXA_BENCH_LIST_STORE (bench/runs-list.sh makes it first), so
// the figure is the command without the process start-up. It reports the
// writes per listing: the output is buffered, not written cell by cell.
func BenchmarkRunsList(b *testing.B) {
	path := os.Getenv("NEXA_BENCH_LIST_STORE")
	if _, err := os.Stat(path); path == "" || err != nil {
		b.Skip("set NEXA_BENCH_LIST_STORE to a store made by BenchmarkList of internal/store")
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"text", []string{"runs", "list", "--store", path}},
		{"json", []string{"runs", "list", "--json", "--store", path}},
		{"all_text", []string{"runs", "list", "--limit", "0", "--store", path}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var w countingWriter
			for i := 0; i < b.N; i++ {
				if code := Main(c.args, nil, &w, io.Discard); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(w.writes)/float64(b.N), "writes/op")
		})
	}
}
