package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nexa-run/nexa/internal/state"
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

// Error codes of an import docs/reference/json.md#error-codes: the file is not a valid export, or a
// run of the file is already in the target store. CodeExportTooLarge is
// an export refused because its file would be larger than an import reads.
const (
	CodeExportInvalid  = "export_invalid"
	CodeRunExists      = "run_exists"
	CodeExportTooLarge = "export_too_large"
)

// MaxExportBytes bounds an export file (docs/reference/cli.md#size-limits). An
// import holds the whole file in memory to check it before it writes
// anything, so the file must be bounded; export refuses to write a file
// larger than this, so that every export can be imported again.
const MaxExportBytes = 256 << 20

// maxHeaderBytes bounds the header line. A real header is about a hundred
// bytes; a longer first line is not an export, and a stream without line
// breaks (/dev/zero) is refused after this much instead of after the
// whole limit.
const maxHeaderBytes = 4 << 10

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
// every run is loaded (each a consistent snapshot) and encoded before the
// first byte is written, so an unknown id, or a file that would be larger
// than MaxExportBytes (CodeExportTooLarge), writes nothing. A run that an
// executor holds is exported as it stands, without its lease, and listed
// in the report's Held. An id named twice is exported once.
func Export(ctx context.Context, s state.Store, ids []string, w io.Writer, now time.Time) (ExportReport, error) {
	return exportLimit(ctx, s, ids, w, now, MaxExportBytes)
}

// exportLimit is Export refusing a file of more than limit bytes.
func exportLimit(ctx context.Context, s state.Store, ids []string, w io.Writer, now time.Time, limit int) (ExportReport, error) {
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ExportHeader{Format: ExportFormat, Version: ExportVersion, Runs: len(recs), ExportedAt: now.UTC()}); err != nil {
		return rep, fmt.Errorf("encode export header: %w", err)
	}
	for _, rec := range recs {
		before := buf.Len()
		if err := enc.Encode(rec); err != nil {
			return rep, fmt.Errorf("encode run %s: %w", rec.Run.ID, err)
		}
		if buf.Len() > limit {
			return rep, refuse(CodeExportTooLarge, "the export would be over %s, the limit for an import (run %s alone is %d bytes); export fewer runs at a time; nothing was exported",
				sizeText(int64(limit)), rec.Run.ID, buf.Len()-before)
		}
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(buf.Bytes()); err != nil {
		return rep, fmt.Errorf("write export: %w", err)
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

// RunCalls names calls of one run.
type RunCalls struct {
	RunID   string   `json:"run_id"`
	CallIDs []string `json:"call_ids"`
}

// ImportReport says what Import did: the runs it created, those it refused
// (their id is taken), those whose logs were dropped because the target
// store keeps no logs, and, per imported run, the calls whose decisions
// were dropped (pending again) or kept as the importer's.
type ImportReport struct {
	Imported         []string        `json:"imported"`
	Refused          []ImportRefusal `json:"refused"`
	LogsDropped      []string        `json:"logs_dropped,omitempty"`
	DecisionsDropped []RunCalls      `json:"decisions_dropped"`
	DecisionsKept    []RunCalls      `json:"decisions_kept"`
}

// ImportOptions say how Import treats the decisions a file carries.
type ImportOptions struct {
	// KeepDecisions keeps the decisions recorded on calls that have not
	// executed, as decisions of Importer made at Now. Without it they
	// are dropped: a file is not proof that anyone decided, so an import
	// never approves (or denies) a call on its own.
	KeepDecisions bool
	// Importer names the person importing (the CLI's decider); kept
	// decisions are recorded as decided_by "import:<Importer>".
	Importer string
	// Now is the time of the import: decided_at of a kept decision, and
	// updated_at of a run whose decisions changed. Zero means time.Now.
	Now time.Time
}

// ImportedBy is the decided_by of a decision kept by an import of
// importer: the importer vouches for it, and the prefix says it came from
// a file rather than from a decision made here.
func ImportedBy(importer string) string {
	if importer == "" {
		return "import"
	}
	return "import:" + importer
}

// Import creates in s each run of recs, a file ReadExport has checked
// whole (so a file that is not a valid export imports nothing). Every run
// is created on its own, as the file has it but at revision 1 and held by
// no one, with its journal as it was (a started call stays an unknown
// outcome) except for decisions on calls that have not executed: those
// are dropped, or kept as the importer's, as opts say (settleDecisions).
// A run whose id s already holds is refused (CodeRunExists) and the
// others are still imported, so an interrupted import can simply be
// repeated.
func Import(ctx context.Context, s state.Store, recs []ExportRecord, opts ImportOptions) (ImportReport, error) {
	rep := ImportReport{Imported: []string{}, Refused: []ImportRefusal{}, DecisionsDropped: []RunCalls{}, DecisionsKept: []RunCalls{}}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	lk, keepsLogs := s.(LogKeeper)
	for _, rec := range recs {
		st := rec.Run
		id := st.ID
		st.Revision, st.Lease, st.Holder = 0, nil, nil
		dropped, kept := settleDecisions(st, opts)
		if err := s.Create(ctx, st); err != nil {
			if errors.Is(err, state.ErrExists) {
				rep.Refused = append(rep.Refused, ImportRefusal{RunID: id, Code: CodeRunExists,
					Message: fmt.Sprintf("run %s is already in the store; it was not imported (an import never replaces a run)", id)})
				continue
			}
			return rep, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
		}
		rep.Imported = append(rep.Imported, id)
		if len(dropped) > 0 {
			rep.DecisionsDropped = append(rep.DecisionsDropped, RunCalls{RunID: id, CallIDs: dropped})
		}
		if len(kept) > 0 {
			rep.DecisionsKept = append(rep.DecisionsKept, RunCalls{RunID: id, CallIDs: kept})
		}
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

// settleDecisions takes from st the authority a file cannot carry: the
// decision, reason, decided_by and decided_at of every call that has not
// executed (stage not_started). Without opts.KeepDecisions they are
// cleared, so the calls wait for a decision made in this store; with it a
// decision is kept as the importer's (decided_by ImportedBy, decided_at
// the import's time, the reason as it was; who decided before the export
// is not kept, as nothing proves it). A running or waiting run left with
// pending calls is waiting_approval, so the calls can be decided at once.
// It returns the call ids whose decisions were dropped and kept.
func settleDecisions(st *state.RunState, opts ImportOptions) (dropped, kept []string) {
	for i := range st.Journal {
		e := &st.Journal[i]
		if e.Stage != state.StageNotStarted || e.Decision == nil && e.Reason == "" && e.DecidedBy == "" && e.DecidedAt == nil {
			continue
		}
		if opts.KeepDecisions && e.Decision != nil {
			at := opts.Now.UTC()
			e.DecidedBy, e.DecidedAt = ImportedBy(opts.Importer), &at
			kept = append(kept, e.CallID)
			continue
		}
		e.Decision, e.Reason, e.DecidedBy, e.DecidedAt = nil, "", "", nil
		dropped = append(dropped, e.CallID)
	}
	if len(dropped)+len(kept) > 0 {
		st.UpdatedAt = opts.Now.UTC()
	}
	if len(dropped) > 0 && (st.Status == state.StatusRunning || st.Status == state.StatusWaitingApproval) && len(PendingCallIDs(st)) > 0 {
		st.Status = state.StatusWaitingApproval
	}
	return dropped, kept
}

// ReadExport reads and checks a whole export file of at most
// MaxExportBytes: its header, and every record against the shape of a
// run. Any problem is a refusal with code CodeExportInvalid naming the
// line.
func ReadExport(r io.Reader) ([]ExportRecord, error) {
	return ReadExportLimit(r, MaxExportBytes)
}

// ReadExportLimit is ReadExport with another size limit, for a caller
// that must bound an import more tightly (and for tests). It never reads
// more than limit+1 bytes of r.
func ReadExportLimit(r io.Reader, limit int64) ([]ExportRecord, error) {
	br := bufio.NewReader(r)
	var (
		hdr   *ExportHeader
		recs  []ExportRecord
		ids   = map[string]int{}
		lineN int
		left  = limit
	)
	bad := func(format string, args ...any) error {
		return refuse(CodeExportInvalid, "line %d: %s; nothing was imported", lineN, fmt.Sprintf(format, args...))
	}
	for {
		most := left
		if hdr == nil && most > maxHeaderBytes {
			most = maxHeaderBytes
		}
		line, over, err := readLine(br, most)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &Error{Code: CodeExportInvalid, Refusal: true, Message: fmt.Sprintf("read export: %v; nothing was imported", err), Err: err}
		}
		if len(line) > 0 || over {
			lineN++
		}
		if over && most < left {
			return nil, bad("not a nexa run export (its first line is longer than %d KiB; a header is one short JSON object with \"format\": %q)", maxHeaderBytes>>10, ExportFormat)
		}
		if over {
			return nil, refuse(CodeExportInvalid, "the file is over %s, the limit for an import; nothing was imported", sizeText(limit))
		}
		left -= int64(len(line))
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

// readLine reads one line of br, its newline included, if it holds at
// most most bytes; over says it is longer (and then the line is not kept).
func readLine(br *bufio.Reader, most int64) (line []byte, over bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if int64(len(line))+int64(len(frag)) > most {
			return nil, true, nil
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, false, err
		}
	}
}

// sizeText writes a size limit for people: whole MiB when it is one, else
// bytes.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
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
		case "--provider", "--model", "--base-url", "--policy":
			if i+1 == len(flags) {
				return fmt.Sprintf("config.resume_flags: %s has no value", flags[i])
			}
			i++
		default:
			return fmt.Sprintf("config.resume_flags: %q is not a flag nexa records (only --provider, --model, --base-url, --no-stream, --policy)", flags[i])
		}
	}
	return ""
}
