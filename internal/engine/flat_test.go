package engine_test

import (
	"context"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// BenchmarkFlat runs one 2,000-round run of a scripted model (one echo call
// per round) on SQLite and reads the step times back from the journal: a
// round is the time between the creation of one journal entry and the
// next. It reports the mean of the first and of the last ten rounds and
// their ratio, which should stay near 1 (no per-step work grows with the
// run). Run it with -benchtime 1x; docs/benchmarks.md#steps.
func BenchmarkFlat(b *testing.B) {
	const rounds = 2000
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString(`{"model": "flat", "turns": [`)
	for i := 0; i < rounds; i++ {
		fmt.Fprintf(&sb, `{"tool_calls": [{"id": "c%d", "name": "echo", "arguments": {"text": "step %d"}}]},`, i, i)
	}
	sb.WriteString(`{"content": "done"}]}`)
	script := filepath.Join(dir, "model.json")
	if err := os.WriteFile(script, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	prog := echoProgram("sha256:flat", ir.BodyPython)
	for i := 0; i < b.N; i++ {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.sqlite3"))
		if err != nil {
			b.Fatal(err)
		}
		p, err := provider.NewScript(script, provider.CheckEveryTurn)
		if err != nil {
			b.Fatal(err)
		}
		r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: p, NoStream: true,
			Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: echoExec{}}})
		if err != nil {
			b.Fatal(err)
		}
		st, err := r.Start(context.Background(), engine.NewRun{Task: "t", WorkDir: dir})
		if err != nil || st.Status != state.StatusCompleted {
			b.Fatalf("%v %s", err, st.Status)
		}
		st, err = s.Load(context.Background(), st.ID)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		j := st.Journal
		if len(j) != rounds {
			b.Fatalf("journal has %d entries, want %d", len(j), rounds)
		}
		sort.Slice(j, func(a, c int) bool { return j[a].Seq < j[c].Seq })
		window := func(from int) time.Duration { return j[from+10].CreatedAt.Sub(j[from].CreatedAt) / 10 }
		first, last := window(0), window(rounds-11)
		b.ReportMetric(float64(first.Nanoseconds()), "first10-ns/step")
		b.ReportMetric(float64(last.Nanoseconds()), "last10-ns/step")
		b.ReportMetric(float64(last)/float64(first), "last/first")
		// On a shared machine ten steps are at the mercy of other
		// processes' disk writes; the medians of the first and last
		// hundred steps say the same with less noise.
		median := func(from int) time.Duration {
			d := make([]time.Duration, 100)
			for k := range d {
				d[k] = j[from+k+1].CreatedAt.Sub(j[from+k].CreatedAt)
			}
			sort.Slice(d, func(a, c int) bool { return d[a] < d[c] })
			return (d[49] + d[50]) / 2
		}
		m1, m2 := median(0), median(rounds-101)
		b.ReportMetric(float64(m1.Nanoseconds()), "first100-median-ns/step")
		b.ReportMetric(float64(m2.Nanoseconds()), "last100-median-ns/step")
		b.ReportMetric(float64(m2)/float64(m1), "median-last/first")
		b.ReportMetric(float64(j[rounds-1].CreatedAt.Sub(j[0].CreatedAt).Nanoseconds())/float64(rounds-1), "mean-ns/step")
	}
}
