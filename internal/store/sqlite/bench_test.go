package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// BenchmarkSaveStep saves one agent step (two new messages, one journal
// upsert and the header) on a run of N messages and N/2 journal entries. The
// cost must not grow with N (docs/reference/runtime.md#store-and-concurrency).
func BenchmarkSaveStep(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s, _ := openTemp(b)
			ctx := context.Background()
			st := newRun("bench", n, n/2)
			if err := s.Create(ctx, st); err != nil {
				b.Fatal(err)
			}
			next := n
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m1, m2 := message(next), message(next+1)
				next += 2
				e := entry(fmt.Sprintf("call-%d", i%(n/2)), i%(n/2), i)
				st.Usage.ToolCalls++
				if err := s.Save(ctx, st, state.Delta{
					Messages: []state.Message{m1, m2},
					Journal:  []state.JournalEntry{e},
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad reads a whole run of 1,000 messages and 500 journal entries.
func BenchmarkLoad(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	if err := s.Create(ctx, newRun("bench", 1000, 500)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := s.Load(ctx, "bench")
		if err != nil || len(st.Messages) != 1000 {
			b.Fatal(err)
		}
	}
}
