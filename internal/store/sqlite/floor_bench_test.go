package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// The rows of one step of bench/peers/add.nx (a native add tool, a
// scripted model), as a real run of the binary stored them, with the seq,
// call id, turn and arguments of step k put in by floorRows.
const (
	floorAssistant = `{"seq":@M,"role":"assistant","tool_calls":[{"id":"call_@C","name":"add","arguments":"{\"a\":@K,\"b\":1}"}]}`
	floorItem      = `{"seq":@K,"raw":{"provider":"script","model":"scripted","turn":@C,"message":{"seq":0,"role":"assistant","tool_calls":[{"id":"call_@C","name":"add","arguments":"{\"a\":@K,\"b\":1}"}]},"finish_reason":"tool_calls","usage":{"input_tokens":51,"output_tokens":5,"total_tokens":56,"provider_requests":1,"tool_calls":0}},"usage":{"input_tokens":51,"output_tokens":5,"total_tokens":56,"provider_requests":1,"tool_calls":0},"created_at":"2026-12-03T11:35:38.014621472Z"}`
	floorProposed  = `{"call_id":"call_@C","tool":"add","seq":@K,"turn":@C,"arguments":{"a":@K,"b":1},"valid":true,"stage":"not_started","needs_approval":false,"risk_level":"low","description":"Add two numbers","success":false,"sandboxed":false,"created_at":"2026-12-03T11:35:38.014624668Z"}`
	floorStarted   = `{"call_id":"call_@C","tool":"add","seq":@K,"turn":@C,"arguments":{"a":@K,"b":1},"valid":true,"stage":"started","needs_approval":false,"risk_level":"low","description":"Add two numbers","success":false,"sandboxed":false,"attempts":1,"created_at":"2026-12-03T11:35:38.014624668Z","started_at":"2026-12-03T11:35:38.015623859Z"}`
	floorCompleted = `{"call_id":"call_@C","tool":"add","seq":@K,"turn":@C,"arguments":{"a":@K,"b":1},"valid":true,"stage":"completed","needs_approval":false,"risk_level":"low","description":"Add two numbers","result":"@C","success":true,"outcome":"executed","sandboxed":false,"attempts":1,"created_at":"2026-12-03T11:35:38.014624668Z","started_at":"2026-12-03T11:35:38.015623859Z","completed_at":"2026-12-03T11:35:38.016189315Z"}`
	floorTool      = `{"seq":@N,"role":"tool","content":"@C","tool_call_id":"call_@C","name":"add"}`
	floorUsage     = `{"input_tokens":10666479,"output_tokens":9991,"total_tokens":10676470,"provider_requests":2001,"tool_calls":2000}`
)

// floorStep is the rows of step k (0-based), ready to bind.
type floorStep struct {
	msgSeq                             int
	callID                             string
	assistant, item, proposed, started string
	completed, tool                    string
}

func floorRows(k int) floorStep {
	r := strings.NewReplacer("@M", strconv.Itoa(2+2*k), "@N", strconv.Itoa(3+2*k), "@K", strconv.Itoa(k), "@C", strconv.Itoa(k+1))
	return floorStep{
		msgSeq: 2 + 2*k, callID: "call_" + strconv.Itoa(k+1),
		assistant: r.Replace(floorAssistant), item: r.Replace(floorItem), proposed: r.Replace(floorProposed),
		started: r.Replace(floorStarted), completed: r.Replace(floorCompleted), tool: r.Replace(floorTool),
	}
}

// stepFrames is how many pages each commit of a step adds to the WAL
// (TestStepWALFrames checks it). A new stage of a journal entry rewrites
// its entry in the index a resume reads the journal's stubs from (stage
// and turn included), one page in each of the started and result commits.
var stepFrames = [3]int{9, 4, 6}

// floorPrefill is how many steps the run holds before the measured ones:
// the N = 2,000 of the peers' workload, so the b-trees have its depth.
const floorPrefill = 2000

// BenchmarkThreeCommitsFloor makes exactly the three commits of one tool
// step of the peers' workload (docs/benchmarks.md#steps), with the rows the binary writes, into a run that already
// holds 2,000 steps, on a store Open made (same schema, WAL,
// synchronous=FULL, cache_size): the reply (header, assistant message,
// provider item, journal entry), started (header, journal entry), the
// result (header, tool message, journal entry). It reports wall and CPU
// time per step, the CPU split into user and system time.
//
//   - io: no SQLite, only the page writes and fsyncs of those commits:
//     what the kernel and the disk cost, whoever writes.
//   - sql: the statements alone, prepared once through database/sql and
//     the driver nexa uses: no runtime, no store code. This is the floor
//     of a step's durable writes with this SQLite.
//   - save: the same rows through Save (the guard's check, the JSON of
//     the header, the compare-and-set), still without a runtime.
func BenchmarkThreeCommitsFloor(b *testing.B) {
	b.Run("io", func(b *testing.B) {
		// The writes of the three commits without SQLite: per commit, for
		// each page it adds to the WAL a 24-byte frame header and a
		// 4 KiB page (two pwrites, as SQLite makes them), then an fsync;
		// 9, 3 and 5 pages (TestStepWALFrames). The file wraps at 1,000
		// frames, as the WAL restarts after a checkpoint.
		f, err := os.Create(filepath.Join(b.TempDir(), "wal"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		var head [24]byte
		page := make([]byte, 4096)
		frame := 0
		commit := func(pages int) {
			for range pages {
				off := int64(32 + (frame%1000)*(24+4096))
				frame++
				if _, err := syscall.Pwrite(fd, head[:], off); err != nil {
					b.Fatal(err)
				}
				if _, err := syscall.Pwrite(fd, page, off+24); err != nil {
					b.Fatal(err)
				}
			}
			if err := syscall.Fsync(fd); err != nil {
				b.Fatal(err)
			}
		}
		measure(b, func(int) {
			for _, pages := range stepFrames {
				commit(pages)
			}
		})
	})
	b.Run("sql", func(b *testing.B) {
		s, _ := openTemp(b)
		ctx := context.Background()
		id := floorRun(b, s)
		// Prepared on the database, as the store prepares them: a
		// transaction then finds each on its connection and reuses it.
		prep := func(q string) *sql.Stmt {
			st, err := s.db.PrepareContext(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
		setUsage, msg := prep(sqlSetUsage+fenceLease), prep(sqlInsertMessage)
		item, entry := prep(sqlUpsertItem), prep(sqlUpsertEntry)
		rev := int64(1)
		commit := func(fn func(tx *sql.Tx)) {
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.StmtContext(ctx, setUsage).ExecContext(ctx, time.Now().UnixNano(), floorUsage, id, rev, "bench", 1); err != nil {
				b.Fatal(err)
			}
			rev++
			fn(tx)
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		ex := func(tx *sql.Tx, st *sql.Stmt, args ...any) {
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
		steps := make([]floorStep, b.N)
		for i := range steps {
			steps[i] = floorRows(floorPrefill + i)
		}
		measure(b, func(i int) {
			r := &steps[i]
			k := floorPrefill + i
			commit(func(tx *sql.Tx) {
				ex(tx, msg, id, r.msgSeq, r.assistant)
				ex(tx, item, id, k, r.item)
				ex(tx, entry, id, r.callID, k, "not_started", k+1, r.proposed)
			})
			commit(func(tx *sql.Tx) { ex(tx, entry, id, r.callID, k, "started", k+1, r.started) })
			commit(func(tx *sql.Tx) {
				ex(tx, msg, id, r.msgSeq+1, r.tool)
				ex(tx, entry, id, r.callID, k, "completed", k+1, r.completed)
			})
		})
	})
	b.Run("save", func(b *testing.B) {
		s, _ := openTemp(b)
		ctx := context.Background()
		id := floorRun(b, s)
		st, err := s.LoadHeader(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		st.Lease = &state.Lease{Owner: "bench", Epoch: 1}
		steps := make([]floorStep, b.N)
		for i := range steps {
			steps[i] = floorRows(floorPrefill + i)
		}
		save := func(d state.Delta) {
			st.Usage.InputTokens += 5
			if err := s.Save(ctx, st, d); err != nil {
				b.Fatal(err)
			}
		}
		// The rows go in as Save receives them from the runtime: values
		// it encodes to JSON.
		type decoded struct {
			a, t     state.Message
			it       state.ProviderItem
			p, sd, c state.JournalEntry
		}
		rows := make([]decoded, b.N)
		for i := range rows {
			r, d := &steps[i], &rows[i]
			for _, u := range []struct {
				body string
				v    any
			}{{r.assistant, &d.a}, {r.tool, &d.t}, {r.item, &d.it}, {r.proposed, &d.p}, {r.started, &d.sd}, {r.completed, &d.c}} {
				if err := json.Unmarshal([]byte(u.body), u.v); err != nil {
					b.Fatal(err)
				}
			}
		}
		measure(b, func(i int) {
			d := &rows[i]
			save(state.Delta{Messages: []state.Message{d.a}, ProviderItems: []state.ProviderItem{d.it}, Journal: []state.JournalEntry{d.p}})
			save(state.Delta{Journal: []state.JournalEntry{d.sd}})
			save(state.Delta{Messages: []state.Message{d.t}, Journal: []state.JournalEntry{d.c}})
		})
	})
}

// measure times b.N steps of step and reports wall, CPU, user and system
// time per step.
func measure(b *testing.B, step func(i int)) {
	b.ReportAllocs()
	b.ResetTimer()
	u0, s0 := cpuTimes()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	u1, s1 := cpuTimes()
	n := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
	b.ReportMetric(float64((u1-u0+s1-s0).Nanoseconds())/n, "cpu-ns/step")
	b.ReportMetric(float64((u1-u0).Nanoseconds())/n, "user-ns/step")
	b.ReportMetric(float64((s1-s0).Nanoseconds())/n, "sys-ns/step")
}

// floorRun creates the benchmark's run, held by the lease owner "bench" at
// epoch 1 as a driving executor holds it, with floorPrefill steps of rows
// written in one transaction.
func floorRun(b testing.TB, s *SQLite) string {
	b.Helper()
	ctx := context.Background()
	st := newRun("floor", 2, 0)
	st.Lease = &state.Lease{Owner: "bench", TTL: time.Hour}
	if err := s.Create(ctx, st); err != nil {
		b.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for k := 0; k < floorPrefill; k++ {
		r := floorRows(k)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{sqlInsertMessage, []any{st.ID, r.msgSeq, r.assistant}},
			{sqlInsertMessage, []any{st.ID, r.msgSeq + 1, r.tool}},
			{sqlUpsertItem, []any{st.ID, k, r.item}},
			{sqlUpsertEntry, []any{st.ID, r.callID, k, "completed", k + 1, r.completed}},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return st.ID
}

// A tool step's three commits add 9, 3 and 5 pages to the WAL (the
// fewest of five steps; a b-tree split adds some now and then): every
// page is a 4 KiB write, so a statement that touched one more index
// would show here before it showed in the timings.
func TestStepWALFrames(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	id := floorRun(t, s)
	st, err := s.LoadHeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st.Lease = &state.Lease{Owner: "bench", Epoch: 1}
	least := [3]int{1 << 30, 1 << 30, 1 << 30}
	for k := floorPrefill; k < floorPrefill+5; k++ {
		r := floorRows(k)
		var a, tool state.Message
		var it state.ProviderItem
		var p, sd, c state.JournalEntry
		for _, u := range []struct {
			body string
			v    any
		}{{r.assistant, &a}, {r.tool, &tool}, {r.item, &it}, {r.proposed, &p}, {r.started, &sd}, {r.completed, &c}} {
			if err := json.Unmarshal([]byte(u.body), u.v); err != nil {
				t.Fatal(err)
			}
		}
		for i, d := range []state.Delta{
			{Messages: []state.Message{a}, ProviderItems: []state.ProviderItem{it}, Journal: []state.JournalEntry{p}},
			{Journal: []state.JournalEntry{sd}},
			{Messages: []state.Message{tool}, Journal: []state.JournalEntry{c}},
		} {
			if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				t.Fatal(err)
			}
			st.Usage.InputTokens += 5
			if err := s.Save(ctx, st, d); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			least[i] = min(least[i], int((fi.Size()-32)/(24+4096)))
		}
	}
	if least != stepFrames {
		t.Fatalf("the commits of a step added %v pages to the WAL, want %v", least, stepFrames)
	}
}
