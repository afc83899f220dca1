package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nexa-run/nexa/internal/runtime/state"
)

// Moving runs between stores (nexa runs export / import). The file is JSON
// lines: a header, then one record per run with everything the run is. The
// format is described for users in docs/store.md ("Moving runs"); change
// ExportVersion whenever a reader of the old version would misread a new
// file.

// ExportFormat names the file format in its header line, so that import
// refuses any other JSON-lines file instead of guessing.
const ExportFormat = "nexa-runs"

// ExportVersion is the version this nexa writes and the newest it reads;
// a file of a newer version is refused, not partly understood.
const ExportVersion = 1

// Error codes of an import (cli.md): the file is not a valid export, or a
// run of the file is already in the target store.
const (
	CodeExportInvalid = "export_invalid"
	CodeRunExists     = "run_exists"
)

// ExportHeader is the first line of an export file. Runs counts the
// records that follow, so a file cut at a line boundary is still detected.
type ExportHeader struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	Runs       int       `json:"runs"`
	ExportedAt time.Time `json:"exported_at"`
}

// ExportRecord is one line after the header: a run as the store holds it
// (its revision for information only: an import starts it again at 1; never
// a lease) and the logs the store keeps for it.
type ExportRecord struct {
	Run  *state.RunState `json:"run"`
	Logs []state.RunLog  `json:"logs"`
}

// LogKeeper is implemented by a store that keeps log files for its runs
// beside their rows (the SQLite store). Export carries those logs and
// Import writes them back; with a store that keeps none, runs move
// without logs.
type LogKeeper interface {
	// RunLogs returns the logs kept for run id; none is not an error.
	RunLogs(ctx context.Context, id string) ([]state.RunLog, error)
	// PutRunLogs writes the logs of a run that was just created.
	PutRunLogs(ctx context.Context, id string, logs []state.RunLog) error
}

// HeldRun is a run that an executor held while it was exported: the
// export is a consistent snapshot at Revision, but the run may go on.
type HeldRun struct {
	RunID    string      `json:"run_id"`
	Revision int64       `json:"revision"`
	Holder   state.Lease `json:"holder"`
}

// ExportReport says what Export wrote.
type ExportReport struct {
	Exported []string  `json:"exported"`
	Held     []HeldRun `json:"held"`
}

// Export writes the runs ids of s to w as an export file. It only reads:
// every run is loaded (each a consistent snapshot) before the first byte
// is written, so an unknown id writes nothing. A run that an executor
// holds is exported as it stands, without its lease, and listed in the
// report's Held. An id named twice is exported once.
func Export(ctx context.Context, s state.Store, ids []string, w io.Writer, now time.Time) (ExportReport, error) {
	rep := ExportReport{Exported: []string{}, Held: []HeldRun{}}
	seen := map[string]bool{}
	var recs []ExportRecord
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if !ValidRunID(id) {
			return rep, refuse(CodeRunNotFound, "%q is not a run id (run ids look like run_01JD7…)", id)
		}
		st, err := Show(ctx, s, id)
		if err != nil {
			return rep, err
		}
		if h := st.Holder; h != nil {
			rep.Held = append(rep.Held, HeldRun{RunID: id, Revision: st.Revision, Holder: *h})
			st.Holder = nil
		}
		rec := ExportRecord{Run: st, Logs: []state.RunLog{}}
		if lk, ok := s.(LogKeeper); ok {
			logs, err := lk.RunLogs(ctx, id)
			if err != nil {
				return rep, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
			}
			if logs != nil {
				rec.Logs = logs
			}
		}
		recs = append(recs, rec)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ExportHeader{Format: ExportFormat, Version: ExportVersion, Runs: len(recs), ExportedAt: now.UTC()}); err != nil {
		return rep, fmt.Errorf("write export: %w", err)
	}
	for _, rec := range recs {
		if err := enc.Encode(rec); err != nil {
			return rep, fmt.Errorf("write export of run %s: %w", rec.Run.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return rep, fmt.Errorf("write export: %w", err)
	}
	for _, rec := range recs {
		rep.Exported = append(rep.Exported, rec.Run.ID)
	}
	return rep, nil
}

// ImportRefusal is a run of the file that was not imported, and why.
type ImportRefusal struct {
	RunID   string `json:"run_id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ImportReport says what Import did: the runs it created, those it refused
// (their id is taken), and those whose logs were dropped because the
// target store keeps no logs.
type ImportReport struct {
	Imported    []string        `json:"imported"`
	Refused     []ImportRefusal `json:"refused"`
	LogsDropped []string        `json:"logs_dropped,omitempty"`
}

// Import creates in s each run of recs, a file ReadExport has checked
// whole (so a file that is not a valid export imports nothing). Every run
// is created on its own, as the file has it but at revision 1 and held by
// no one, with its journal as it was (a started call stays an unknown
// outcome); a run whose id s already holds is refused (CodeRunExists) and
// the others are still imported, so an interrupted import can simply be
// repeated.
func Import(ctx context.Context, s state.Store, recs []ExportRecord) (ImportReport, error) {
	rep := ImportReport{Imported: []string{}, Refused: []ImportRefusal{}}
	lk, keepsLogs := s.(LogKeeper)
	for _, rec := range recs {
		st := rec.Run
		id := st.ID
		st.Revision, st.Lease, st.Holder = 0, nil, nil
		if err := s.Create(ctx, st); err != nil {
			if errors.Is(err, state.ErrExists) {
				rep.Refused = append(rep.Refused, ImportRefusal{RunID: id, Code: CodeRunExists,
					Message: fmt.Sprintf("run %s is already in the store; it was not imported (an import never replaces a run)", id)})
				continue
			}
			return rep, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
		}
		rep.Imported = append(rep.Imported, id)
		if len(rec.Logs) == 0 {
			continue
		}
		if !keepsLogs {
			rep.LogsDropped = append(rep.LogsDropped, id)
			continue
		}
		if err := lk.PutRunLogs(ctx, id, rec.Logs); err != nil {
			return rep, &Error{Code: CodeStoreError, Message: fmt.Sprintf("run %s was imported, but not its logs: %v", id, err), Err: err}
		}
	}
	return rep, nil
}

// ReadExport reads and checks a whole export file: its header, and every
// record against the shape of a run. Any problem is a refusal with code
// CodeExportInvalid naming the line.
func ReadExport(r io.Reader) ([]ExportRecord, error) {
	br := bufio.NewReader(r)
	var (
		hdr   *ExportHeader
		recs  []ExportRecord
		ids   = map[string]int{}
		lineN int
	)
	bad := func(format string, args ...any) error {
		return refuse(CodeExportInvalid, "line %d: %s; nothing was imported", lineN, fmt.Sprintf(format, args...))
	}
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &Error{Code: CodeExportInvalid, Refusal: true, Message: fmt.Sprintf("read export: %v; nothing was imported", err), Err: err}
		}
		if len(line) > 0 {
			lineN++
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			dec := json.NewDecoder(bytes.NewReader(t))
			dec.DisallowUnknownFields()
			if hdr == nil {
				hdr = &ExportHeader{}
				if derr := dec.Decode(hdr); derr != nil || hdr.Format != ExportFormat || dec.More() {
					return nil, bad("not a nexa run export (the first line must be a header with \"format\": %q)", ExportFormat)
				}
				if hdr.Version > ExportVersion || hdr.Version < 1 {
					return nil, bad("export format version %d; this nexa reads version %d (import it with the nexa that exported it, or a newer one)", hdr.Version, ExportVersion)
				}
			} else {
				var rec ExportRecord
				if derr := dec.Decode(&rec); derr != nil {
					return nil, bad("not a run record: %v", derr)
				}
				if dec.More() {
					return nil, bad("more than one JSON value on the line")
				}
				if rec.Run == nil {
					return nil, bad("the record has no \"run\"")
				}
				if msg := checkRun(rec); msg != "" {
					return nil, bad("run %s: %s", rec.Run.ID, msg)
				}
				if first, dup := ids[rec.Run.ID]; dup {
					return nil, bad("run %s is also on line %d", rec.Run.ID, first)
				}
				ids[rec.Run.ID] = lineN
				recs = append(recs, rec)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if hdr == nil {
		return nil, refuse(CodeExportInvalid, "the file is empty: not a nexa run export; nothing was imported")
	}
	if len(recs) != hdr.Runs {
		return nil, refuse(CodeExportInvalid, "the header announces %d run(s), the file holds %d (a cut or edited file?); nothing was imported", hdr.Runs, len(recs))
	}
	return recs, nil
}

// checkRun checks what an import relies on: an id that is a run id, the
// fields every run has, rows the store can key, and nothing that is not
// part of a run (a lease).
func checkRun(rec ExportRecord) string {
	st := rec.Run
	switch {
	case !ValidRunID(st.ID):
		return "run_id is not a run id"
	case !st.Status.Valid():
		return fmt.Sprintf("unknown status %q", st.Status)
	case st.CreatedAt.IsZero() || st.UpdatedAt.IsZero():
		return "created_at and updated_at are required"
	case st.Config.Agent == "" || st.Config.SourceHash == "" || st.Config.Provider.Kind == "":
		return "config needs agent, source_hash and provider.kind"
	case st.Holder != nil:
		return "a run record carries no lease (holder); nexa never exports one"
	}
	if msg := checkResumeFlags(st.Config.ResumeFlags); msg != "" {
		return msg
	}
	for i := 1; i < len(st.Messages); i++ {
		if st.Messages[i].Seq <= st.Messages[i-1].Seq {
			return fmt.Sprintf("message seq %d does not follow %d", st.Messages[i].Seq, st.Messages[i-1].Seq)
		}
	}
	for i := 1; i < len(st.ProviderItems); i++ {
		if st.ProviderItems[i].Seq <= st.ProviderItems[i-1].Seq {
			return fmt.Sprintf("provider item seq %d does not follow %d", st.ProviderItems[i].Seq, st.ProviderItems[i-1].Seq)
		}
	}
	calls := map[string]bool{}
	for _, e := range st.Journal {
		switch {
		case e.CallID == "":
			return "a journal entry has no call_id"
		case calls[e.CallID]:
			return fmt.Sprintf("call %s is journaled twice", e.CallID)
		case e.Stage != state.StageNotStarted && e.Stage != state.StageStarted && e.Stage != state.StageCompleted:
			return fmt.Sprintf("call %s has unknown stage %q", e.CallID, e.Stage)
		}
		calls[e.CallID] = true
	}
	names := map[string]bool{}
	for _, l := range rec.Logs {
		if l.Name != state.LogTools && l.Name != state.LogMCP || names[l.Name] {
			return fmt.Sprintf("log %q is unknown or named twice (logs are %q and %q)", l.Name, state.LogTools, state.LogMCP)
		}
		names[l.Name] = true
	}
	return ""
}

// checkResumeFlags accepts only the flags nexa records when a run starts
// (providerFlags in the CLI): they are printed back as commands to run, so
// an imported file must not smuggle others into them.
func checkResumeFlags(flags []string) string {
	for i := 0; i < len(flags); i++ {
		switch flags[i] {
		case "--no-stream":
		case "--provider", "--model", "--base-url":
			if i+1 == len(flags) {
				return fmt.Sprintf("config.resume_flags: %s has no value", flags[i])
			}
			i++
		default:
			return fmt.Sprintf("config.resume_flags: %q is not a flag nexa records (only --provider, --model, --base-url, --no-stream)", flags[i])
		}
	}
	return ""
}
