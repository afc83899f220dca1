package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/postgres/pgtest"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// exportStores are the stores runs move between: every pair is tested in
// both directions. A new store kind is one more line here.
var exportStores = []struct {
	name string
	open func(t *testing.T) state.Store
}{
	{"sqlite", openSQLiteStore},
	{"postgres", openPGStore},
}

// openPGStore opens a fresh schema of NEXA_TEST_POSTGRES (skipped without
// it outside CI).
func openPGStore(t *testing.T) state.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.FreshURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openSQLiteStore(t *testing.T) state.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStorePair runs fn for every (source, target) pair of exportStores.
func eachStorePair(t *testing.T, fn func(t *testing.T, src, dst state.Store)) {
	for _, a := range exportStores {
		for _, b := range exportStores {
			t.Run(a.name+"_to_"+b.name, func(t *testing.T) { fn(t, a.open(t), b.open(t)) })
		}
	}
}

// fullRun is a run with every part a run can have: a decided and executed
// call, a started call (unknown outcome), a pending call, provider replies,
// an output and an error, a deadline, MCP servers and resume flags.
func fullRun(id string) *state.RunState {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)
	dl := at.Add(15 * time.Minute)
	yes := true
	started := at.Add(2 * time.Second)
	done := at.Add(3 * time.Second)
	return &state.RunState{
		ID: id, Status: state.StatusUnknownOutcome, CreatedAt: at, UpdatedAt: at.Add(5 * time.Second),
		Config: state.Config{SourceFile: "review.nx", SourceHash: "sha256:abc", Agent: "Reviewer",
			Provider: state.ProviderIdentity{Kind: "script", Model: "m", Digest: "sha256:def"},
			Budgets:  state.Budgets{MaxTurns: 9, MaxTokens: 1000}, Deadline: &dl, WorkDir: "/w",
			MCPServers:  []state.MCPServer{{Spec: "notes", SchemaHash: "sha256:1"}},
			ResumeFlags: []string{"--provider", "script:model.json", "--no-stream"}},
		Task: "Review the supplied change",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "Review the supplied change"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "c1", Name: "record", Arguments: `{"content":"LGTM"}`}, {ID: "c2", Name: "charge", Arguments: `{"n":1}`}, {ID: "c3", Name: "record", Arguments: `not json`}}},
			{Seq: 2, Role: state.RoleTool, ToolCallID: "c1", Name: "record", Content: "recorded", IsError: true},
		},
		ProviderItems: []state.ProviderItem{{Seq: 0, Raw: json.RawMessage(`{"id":"r1","choices":[]}`), Usage: state.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, CreatedAt: at.Add(time.Second)}},
		Journal: []state.JournalEntry{
			{CallID: "c1", Tool: "record", Seq: 0, Turn: 1, Arguments: json.RawMessage(`{"content":"LGTM"}`), Valid: true, Stage: state.StageCompleted,
				NeedsApproval: true, Risk: "high", Description: "Record", Decision: &yes, Reason: "ok", Result: "recorded", Success: true,
				Outcome: "executed", Sandboxed: true, Attempts: 1, CreatedAt: at, StartedAt: &started, CompletedAt: &done},
			{CallID: "c2", Tool: "charge", Seq: 1, Turn: 1, Arguments: json.RawMessage(`{"n":1}`), Valid: true, Stage: state.StageStarted,
				Risk: "low", CreatedAt: at, StartedAt: &started},
			{CallID: "c3", Tool: "record", Seq: 2, Turn: 1, Arguments: json.RawMessage(`"not json"`), RawArgs: "not json", Stage: state.StageNotStarted,
				NeedsApproval: true, Risk: "high", CreatedAt: at},
		},
		Usage:  state.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, ProviderRequests: 1, ToolCalls: 1},
		Output: json.RawMessage(`{"verdict":"ok"}`),
		Error:  &state.RunError{Code: "unknown_outcome", Message: "call c2 has an unknown outcome"},
	}
}

func export(t *testing.T, s state.Store, ids ...string) (engine.ExportReport, []byte) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := engine.Export(context.Background(), s, ids, &buf, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return rep, buf.Bytes()
}

func importBytes(s state.Store, b []byte) (engine.ImportReport, error) {
	recs, err := engine.ReadExport(bytes.NewReader(b))
	if err != nil {
		return engine.ImportReport{}, err
	}
	return engine.Import(context.Background(), s, recs, engine.ImportOptions{})
}

// TestExportImportRoundTrip: a run moved to another store loads exactly as
// it did (at revision 1 and held by no one), with its logs, and the
// moved run takes a lease like any other.
func TestExportImportRoundTrip(t *testing.T) {
	eachStorePair(t, func(t *testing.T, src, dst state.Store) {
		ctx := context.Background()
		const id = "run_01JDROUNDTRIP"
		if err := src.Create(ctx, fullRun(id)); err != nil {
			t.Fatal(err)
		}
		// A save after the start: the source run is at revision 2.
		if _, err := src.Update(ctx, id, func(st *state.RunState) (state.Delta, error) {
			st.Usage.ToolCalls = 2
			return state.Delta{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		logs := []state.RunLog{{Name: state.LogTools, Data: []byte("tool said \xff\n")}, {Name: state.LogMCP, Data: []byte("server up\n")}}
		srcLogs, keeps := src.(engine.LogKeeper)
		if keeps {
			if err := srcLogs.PutRunLogs(ctx, id, logs); err != nil {
				t.Fatal(err)
			}
		}
		want, err := src.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}

		rep, file := export(t, src, id, id)
		if !reflect.DeepEqual(rep.Exported, []string{id}) || len(rep.Held) != 0 {
			t.Fatalf("export report %+v", rep)
		}
		lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"format":"nexa-runs","version":1,"runs":1,`) {
			t.Fatalf("export file:\n%s", file)
		}
		irep, err := importBytes(dst, file)
		if err != nil || !reflect.DeepEqual(irep.Imported, []string{id}) || len(irep.Refused) != 0 {
			t.Fatalf("import: %v %+v", err, irep)
		}
		got, err := dst.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 1 || got.Holder != nil {
			t.Fatalf("imported run at revision %d, holder %+v; want 1 and none", got.Revision, got.Holder)
		}
		want.Revision = 1
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("imported run differs:\n%s\nwant:\n%s", g, w)
		}
		if e := got.Entry("c2"); e.Stage != state.StageStarted || len(engine.UnknownCalls(got)) != 1 {
			t.Fatalf("the started call is no longer an unknown outcome: %+v", e)
		}
		if dstLogs, ok := dst.(engine.LogKeeper); ok && keeps {
			gotLogs, err := dstLogs.RunLogs(ctx, id)
			if err != nil || !reflect.DeepEqual(gotLogs, logs) {
				t.Fatalf("logs after import: %v %q", err, gotLogs)
			}
		}
		if _, err := dst.Acquire(ctx, id, "next", time.Minute); err != nil {
			t.Fatalf("the imported run cannot be taken: %v", err)
		}
	})
}

// TestExportHeldRun: a run an executor holds is exported as it stands,
// reported as held, and the file carries nothing of the lease.
func TestExportHeldRun(t *testing.T) {
	for _, sk := range exportStores {
		t.Run(sk.name, func(t *testing.T) {
			ctx := context.Background()
			src := sk.open(t)
			const id = "run_01JDHELD"
			if err := src.Create(ctx, fullRun(id)); err != nil {
				t.Fatal(err)
			}
			l, err := src.Acquire(ctx, id, "driver-on-host-a", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			rep, file := export(t, src, id)
			if len(rep.Held) != 1 || rep.Held[0].RunID != id || rep.Held[0].Holder.Owner != "driver-on-host-a" || rep.Held[0].Revision != 1 {
				t.Fatalf("held = %+v", rep.Held)
			}
			if bytes.Contains(file, []byte("driver-on-host-a")) || bytes.Contains(file, []byte(`"holder"`)) {
				t.Fatalf("the export carries the lease:\n%s", file)
			}
			// The export wrote nothing: the holder still saves.
			st, err := src.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			st.Lease = l
			if err := src.Save(ctx, st, state.Delta{}); err != nil {
				t.Fatalf("the holder cannot save after the export: %v", err)
			}
		})
	}
}

// TestImportRefusesExistingRun: a run whose id the store holds is refused
// and left as it is; the other runs of the file are imported, so the same
// file can be imported again after an interruption.
func TestImportRefusesExistingRun(t *testing.T) {
	eachStorePair(t, func(t *testing.T, src, dst state.Store) {
		ctx := context.Background()
		for _, id := range []string{"run_01JDA", "run_01JDB"} {
			if err := src.Create(ctx, fullRun(id)); err != nil {
				t.Fatal(err)
			}
		}
		_, file := export(t, src, "run_01JDA", "run_01JDB")
		mine := fullRun("run_01JDA")
		mine.Task = "the target's own run"
		if err := dst.Create(ctx, mine); err != nil {
			t.Fatal(err)
		}
		rep, err := importBytes(dst, file)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rep.Imported, []string{"run_01JDB"}) || len(rep.Refused) != 1 ||
			rep.Refused[0].RunID != "run_01JDA" || rep.Refused[0].Code != engine.CodeRunExists ||
			rep.Refused[0].Message != "run run_01JDA is already in the store; it was not imported (an import never replaces a run)" {
			t.Fatalf("report %+v", rep)
		}
		if st, err := dst.Load(ctx, "run_01JDA"); err != nil || st.Task != "the target's own run" || st.Revision != 1 {
			t.Fatalf("the existing run was changed: %v %+v", err, st)
		}
		rep, err = importBytes(dst, file)
		if err != nil || len(rep.Imported) != 0 || len(rep.Refused) != 2 {
			t.Fatalf("second import: %v %+v", err, rep)
		}
	})
}

// TestImportRefusesInvalidFile: a file that is not a whole, valid export
// imports nothing, and the error names the line and the reason.
func TestImportRefusesInvalidFile(t *testing.T) {
	src := openSQLiteStore(t)
	if err := src.Create(context.Background(), fullRun("run_01JDGOOD")); err != nil {
		t.Fatal(err)
	}
	_, good := export(t, src, "run_01JDGOOD")
	lines := strings.SplitN(string(good), "\n", 2)
	header, record := lines[0], strings.TrimSuffix(lines[1], "\n")
	header2 := strings.Replace(header, `"runs":1`, `"runs":2`, 1)
	edit := func(old, new string) string { return strings.Replace(record, old, new, 1) }
	cases := []struct{ name, file, want string }{
		{"empty", "", "the file is empty"},
		{"not an export", `{"run_id":"run_X"}` + "\n", "line 1: not a nexa run export"},
		{"newer version", strings.Replace(header, `"version":1`, `"version":2`, 1) + "\n" + record + "\n", "line 1: export format version 2; this nexa reads version 1"},
		{"cut file", header2 + "\n" + record + "\n", "the header announces 2 run(s), the file holds 1"},
		{"cut line", header + "\n" + record[:len(record)/2] + "\n", "line 2: not a run record"},
		{"unknown field", header + "\n" + edit(`{"run":{`, `{"run":{"secret_token":"x",`) + "\n", `line 2: not a run record: json: unknown field "secret_token"`},
		{"lease", header + "\n" + edit(`{"run":{`, `{"run":{"holder":{"owner":"x","epoch":3,"expires_at":"2030-01-01T00:00:00Z"},`) + "\n", "a run record carries no lease"},
		{"bad id", header + "\n" + edit(`"run_01JDGOOD"`, `"../../etc"`) + "\n", "run_id is not a run id"},
		{"bad status", header + "\n" + edit(`"status":"unknown_outcome"`, `"status":"paused"`) + "\n", `unknown status "paused"`},
		{"bad stage", header + "\n" + edit(`"stage":"started"`, `"stage":"running"`) + "\n", `call c2 has unknown stage "running"`},
		{"smuggled flag", header + "\n" + edit(`"--no-stream"`, `"--store"`) + "\n", `"--store" is not a flag nexa records`},
		{"twice", header2 + "\n" + record + "\n" + record + "\n", "line 3: run run_01JDGOOD is also on line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := openSQLiteStore(t)
			_, err := importBytes(dst, []byte(c.file))
			re, ok := engine.AsError(err)
			if !ok || re.Code != engine.CodeExportInvalid || !re.Refusal || !strings.Contains(re.Message, c.want) || !strings.HasSuffix(re.Message, "nothing was imported") {
				t.Fatalf("error = %v, want %s containing %q", err, engine.CodeExportInvalid, c.want)
			}
			if sums, _ := dst.List(context.Background(), state.Filter{}); len(sums) != 0 {
				t.Fatalf("an invalid file imported %d run(s)", len(sums))
			}
		})
	}
}

// TestExportUnknownRunWritesNothing: one unknown id among several fails
// the export before anything is written.
func TestExportUnknownRunWritesNothing(t *testing.T) {
	src := openSQLiteStore(t)
	if err := src.Create(context.Background(), fullRun("run_01JDONE")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err := engine.Export(context.Background(), src, []string{"run_01JDONE", "run_01JDNONE"}, &buf, time.Now())
	if re, ok := engine.AsError(err); !ok || re.Code != engine.CodeRunNotFound || buf.Len() != 0 {
		t.Fatalf("err %v, wrote %q", err, buf.String())
	}
}

// TestImportedRunResumesToCompletion: a run waiting for approval, moved to
// another store, is approved and completed there; the tool runs once.
func TestImportedRunResumesToCompletion(t *testing.T) {
	eachStorePair(t, func(t *testing.T, src, dst state.Store) {
		ctx := context.Background()
		prog := &ir.Program{
			Hash: "sha256:move",
			Tools: []*ir.Tool{{Name: "echo", Description: "Echo", Risk: "high", RequiresApproval: true, Timeout: 5,
				Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
				Body:       ir.Body{Kind: ir.BodyNative}}},
			Agents: []*ir.Agent{{Name: "A", Prompt: "p", Tools: []string{"echo"}, Retry: -1}},
		}
		runner := func(s state.Store, exec tool.Executor) *engine.Runner {
			r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: loopProvider{rounds: 1},
				Executors: map[ir.BodyKind]tool.Executor{ir.BodyNative: exec}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var execs []string
		count := execFunc(func(inv tool.Invocation) { execs = append(execs, inv.CallID) })
		st, err := runner(src, count).Start(ctx, engine.NewRun{Task: "t", WorkDir: "/w"})
		if err != nil || st.Status != state.StatusWaitingApproval {
			t.Fatalf("start: %v %s", err, st.Status)
		}
		_, file := export(t, src, st.ID)
		if _, err := importBytes(dst, file); err != nil {
			t.Fatal(err)
		}
		got, err := runner(dst, count).Resume(ctx, engine.ResumeOptions{RunID: st.ID,
			Request:   engine.ResumeRequest{SourceHash: prog.Hash, Agent: "A", Provider: loopProvider{}.Identity(), WorkDir: "/w"},
			Decisions: []engine.Decision{{CallID: "c0", Approve: true}}})
		if err != nil || got.Status != state.StatusCompleted {
			t.Fatalf("resume in the target store: %v %s", err, got.Status)
		}
		if !reflect.DeepEqual(execs, []string{"c0"}) {
			t.Fatalf("executions %v, want c0 once", execs)
		}
		if left, err := src.Load(ctx, st.ID); err != nil || left.Status != state.StatusWaitingApproval {
			t.Fatalf("the source run changed: %v %s", err, left.Status)
		}
	})
}

// execFunc is an executor that reports each call and succeeds.
type execFunc func(tool.Invocation)

func (f execFunc) Execute(_ context.Context, inv tool.Invocation) (tool.Outcome, error) {
	f(inv)
	return tool.Outcome{Output: "ok", Success: true}, nil
}

// TestSQLiteRunLogsReadOnly: exporting a run without logs creates no logs
// directory (an export only reads).
func TestSQLiteRunLogsReadOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(context.Background(), fullRun("run_01JDNOLOGS")); err != nil {
		t.Fatal(err)
	}
	rep, file := export(t, s, "run_01JDNOLOGS")
	if len(rep.Exported) != 1 || !bytes.Contains(file, []byte(`"logs":[]`)) {
		t.Fatalf("%+v\n%s", rep, file)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("export created the logs directory: %v", err)
	}
}

// decidedRun is fullRun waiting for approval with decisions on calls that
// have not executed: c3 approved by someone named in the file, c4 denied,
// c5 with a stray reason and no decision. c1 is executed; its decision is
// history and stays.
func decidedRun(id string, status state.Status) *state.RunState {
	st := fullRun(id)
	st.Status, st.Error = status, nil
	yes, no := true, false
	at := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	st.Journal[1].Stage, st.Journal[1].StartedAt = state.StageCompleted, nil
	st.Journal[1].Outcome, st.Journal[1].Success = "executed", true
	c3 := &st.Journal[2]
	c3.Decision, c3.Reason, c3.DecidedBy, c3.DecidedAt = &yes, "looks fine", "mallory", &at
	st.Journal = append(st.Journal,
		state.JournalEntry{CallID: "c4", Tool: "record", Seq: 3, Turn: 1, Arguments: json.RawMessage(`{"content":"x"}`), Valid: true,
			Stage: state.StageNotStarted, NeedsApproval: true, Risk: "high", Decision: &no, Reason: "no", DecidedBy: "bob", DecidedAt: &at, CreatedAt: at},
		state.JournalEntry{CallID: "c5", Tool: "record", Seq: 4, Turn: 1, Arguments: json.RawMessage(`{"content":"y"}`), Valid: true,
			Stage: state.StageNotStarted, NeedsApproval: true, Risk: "high", Reason: "stray", CreatedAt: at})
	return st
}

// TestImportDropsDecisions: decisions on calls that have not executed do
// not survive an import: the calls are pending again, the run (waiting or
// running when exported) waits for approval, and the report names the
// calls. The decision on an executed call is history and is kept.
func TestImportDropsDecisions(t *testing.T) {
	for _, status := range []state.Status{state.StatusWaitingApproval, state.StatusRunning} {
		t.Run(string(status), func(t *testing.T) {
			ctx := context.Background()
			src, dst := openSQLiteStore(t), openSQLiteStore(t)
			const id = "run_01JDDECIDED"
			if err := src.Create(ctx, decidedRun(id, status)); err != nil {
				t.Fatal(err)
			}
			_, file := export(t, src, id)
			recs, err := engine.ReadExport(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
			rep, err := engine.Import(ctx, dst, recs, engine.ImportOptions{Importer: "alice", Now: now})
			if err != nil {
				t.Fatal(err)
			}
			want := []engine.RunCalls{{RunID: id, CallIDs: []string{"c3", "c4", "c5"}}}
			if !reflect.DeepEqual(rep.DecisionsDropped, want) || len(rep.DecisionsKept) != 0 {
				t.Fatalf("report %+v", rep)
			}
			got, err := dst.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != state.StatusWaitingApproval || !got.UpdatedAt.Equal(now) {
				t.Fatalf("status %s, updated_at %s; want waiting_approval at the import", got.Status, got.UpdatedAt)
			}
			if ids := engine.PendingCallIDs(got); !reflect.DeepEqual(ids, []string{"c3", "c4", "c5"}) {
				t.Fatalf("pending calls %v", ids)
			}
			for _, c := range []string{"c3", "c4", "c5"} {
				if e := got.Entry(c); e.Decision != nil || e.Reason != "" || e.DecidedBy != "" || e.DecidedAt != nil {
					t.Fatalf("call %s keeps a decision: %+v", c, e)
				}
			}
			if e := got.Entry("c1"); e.Decision == nil || !*e.Decision || e.Reason != "ok" {
				t.Fatalf("the executed call lost its decision: %+v", e)
			}
		})
	}
}

// TestImportKeepDecisions: with KeepDecisions a decision on a call not
// yet executed is kept as the importer's, at the import's time, with its
// reason; the name the file gave is gone. A stray reason without a
// decision is still dropped.
func TestImportKeepDecisions(t *testing.T) {
	ctx := context.Background()
	src, dst := openSQLiteStore(t), openSQLiteStore(t)
	const id = "run_01JDKEPT"
	if err := src.Create(ctx, decidedRun(id, state.StatusWaitingApproval)); err != nil {
		t.Fatal(err)
	}
	_, file := export(t, src, id)
	recs, err := engine.ReadExport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	rep, err := engine.Import(ctx, dst, recs, engine.ImportOptions{KeepDecisions: true, Importer: "alice", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.DecisionsKept, []engine.RunCalls{{RunID: id, CallIDs: []string{"c3", "c4"}}}) ||
		!reflect.DeepEqual(rep.DecisionsDropped, []engine.RunCalls{{RunID: id, CallIDs: []string{"c5"}}}) {
		t.Fatalf("report %+v", rep)
	}
	got, err := dst.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c3, c4 := got.Entry("c3"), got.Entry("c4")
	if c3.Decision == nil || !*c3.Decision || c3.Reason != "looks fine" || c3.DecidedBy != "import:alice" || !c3.DecidedAt.Equal(now) {
		t.Fatalf("c3 %+v", c3)
	}
	if c4.Decision == nil || *c4.Decision || c4.DecidedBy != "import:alice" || bytes.Contains(file, []byte("import:")) {
		t.Fatalf("c4 %+v", c4)
	}
	if engine.ImportedBy("") != "import" {
		t.Fatalf("an importer without a name is %q", engine.ImportedBy(""))
	}
}

// TestImportedApprovalNotExecuted: an export edited to approve a pending
// call is imported, and a plain resume (no decision given) does not run
// the call: the run waits for approval.
func TestImportedApprovalNotExecuted(t *testing.T) {
	ctx := context.Background()
	src, dst := openSQLiteStore(t), openSQLiteStore(t)
	prog := &ir.Program{
		Hash: "sha256:forged",
		Tools: []*ir.Tool{{Name: "echo", Description: "Echo", Risk: "high", RequiresApproval: true, Timeout: 5,
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Body:       ir.Body{Kind: ir.BodyNative}}},
		Agents: []*ir.Agent{{Name: "A", Prompt: "p", Tools: []string{"echo"}, Retry: -1}},
	}
	var execs []string
	runner := func(s state.Store) *engine.Runner {
		r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: loopProvider{rounds: 1},
			Executors: map[ir.BodyKind]tool.Executor{ir.BodyNative: execFunc(func(inv tool.Invocation) { execs = append(execs, inv.CallID) })}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	st, err := runner(src).Start(ctx, engine.NewRun{Task: "t", WorkDir: "/w"})
	if err != nil || st.Status != state.StatusWaitingApproval {
		t.Fatalf("start: %v %s", err, st.Status)
	}
	_, file := export(t, src, st.ID)
	forged := bytes.Replace(file, []byte(`"stage":"not_started"`), []byte(`"stage":"not_started","decision":true,"decided_by":"mallory"`), 1)
	if bytes.Equal(forged, file) {
		t.Fatal("no pending call to forge a decision on")
	}
	if _, err := importBytes(dst, forged); err != nil {
		t.Fatal(err)
	}
	got, err := runner(dst).Resume(ctx, engine.ResumeOptions{RunID: st.ID,
		Request: engine.ResumeRequest{SourceHash: prog.Hash, Agent: "A", Provider: loopProvider{}.Identity(), WorkDir: "/w"}})
	if err != nil || got.Status != state.StatusWaitingApproval || len(execs) != 0 {
		t.Fatalf("resume after a forged approval: %v, status %s, executed %v; want waiting_approval and nothing run", err, got.Status, execs)
	}
}

// countingReader hands out an endless stream (head, then fill bytes) and
// counts what was read.
type countingReader struct {
	head []byte
	fill byte
	n    int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	k := copy(p, r.head)
	r.head = r.head[k:]
	for i := k; i < len(p); i++ {
		p[i] = r.fill
	}
	r.n += int64(len(p))
	return len(p), nil
}

// TestReadExportSizeLimit: an export is read up to its limit and no
// further: a file of exactly the limit imports, one byte more is refused
// with the limit named, an endless stream after a header is refused after
// about the limit, and a stream without a header line (/dev/zero) after a
// few KiB.
func TestReadExportSizeLimit(t *testing.T) {
	src := openSQLiteStore(t)
	if err := src.Create(context.Background(), fullRun("run_01JDSIZE")); err != nil {
		t.Fatal(err)
	}
	_, file := export(t, src, "run_01JDSIZE")
	limit := int64(len(file))
	if recs, err := engine.ReadExportLimit(bytes.NewReader(file), limit); err != nil || len(recs) != 1 {
		t.Fatalf("a file of exactly the limit: %v", err)
	}
	refused := func(err error, want string) {
		t.Helper()
		re, ok := engine.AsError(err)
		if !ok || re.Code != engine.CodeExportInvalid || re.Message != want {
			t.Fatalf("error %v, want %q", err, want)
		}
	}
	_, err := engine.ReadExportLimit(bytes.NewReader(append(file, '\n')), limit)
	refused(err, fmt.Sprintf("the file is over %d bytes, the limit for an import; nothing was imported", limit))

	header, _, _ := bytes.Cut(file, []byte("\n"))
	endless := &countingReader{head: append(header, '\n'), fill: '{'}
	_, err = engine.ReadExportLimit(endless, 1<<20)
	refused(err, "the file is over 1 MiB, the limit for an import; nothing was imported")
	if endless.n > 1<<20+64<<10 {
		t.Fatalf("read %d bytes of a stream limited to 1 MiB", endless.n)
	}

	zeros := &countingReader{}
	_, err = engine.ReadExport(zeros)
	refused(err, `line 1: not a nexa run export (its first line is longer than 4 KiB; a header is one short JSON object with "format": "nexa-runs"); nothing was imported`)
	if zeros.n > 64<<10 {
		t.Fatalf("read %d bytes of a stream without a header", zeros.n)
	}
}
