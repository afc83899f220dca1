package store

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// BenchmarkOpenWithLog: Open, one read, Close of a store whose
// write-ahead log Close left behind, by the log's size: what the next
// process pays for the log (SQLite's recovery reads all of it) against
// the checkpoint and fsyncs Close no longer makes (see walKeep).
func BenchmarkOpenWithLog(b *testing.B) {
	for _, runs := range []int{0, 1, 4, 8, 12} {
		s, path := openTemp(b)
		for i := range runs {
			if err := s.Create(context.Background(), newRun(fmt.Sprintf("r%d", i), 30, 10)); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
		if runs == 0 {
			checkpoint(b, path)
		}
		var size int64
		if fi, err := os.Stat(path + "-wal"); err == nil {
			size = fi.Size()
		}
		b.Run(fmt.Sprintf("log=%dKiB", size>>10), func(b *testing.B) {
			for b.Loop() {
				s, err := Open(context.Background(), path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.LoadHeader(context.Background(), "r0"); err != nil && runs > 0 {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
