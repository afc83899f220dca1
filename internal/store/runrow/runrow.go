// Package runrow is the one encoding of a run's rows shared by every store
// (SQLite and PostgreSQL). A run saved by one store must load the same from
// another, and a fix to how a header or a journal body is written must reach
// both, so the driver-independent half of the mapping lives here: each store
// keeps only its driver's types for NULL and its queries.
package runrow

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/nexa-run/nexa/internal/state"
)

// Header is a run's header columns as stored, comparable with == so a store
// can tell whether a save changes more than the usage. Output and Error are
// SQL NULL unless HasOutput or HasError.
type Header struct {
	Status, Agent, File string
	Config, Task, Usage string
	Output, Error       string
	HasOutput, HasError bool
	// SourceHash is the config's program hash, and Runnable is
	// state.Runnable of the run: columns a worker's claim selects on,
	// written with every header change (a save that changes only
	// journal rows changes Runnable when it decides the last pending
	// call, so the header is then written whole).
	SourceHash string
	Runnable   bool
	// WakeAt is state.WakeAt of the run in Unix nanoseconds, when
	// HasWakeAt: a claim also takes a run whose WakeAt has passed by
	// the store's clock (an approval's wait ran out), written with
	// every header change like Runnable.
	WakeAt    int64
	HasWakeAt bool
}

// Encode gives the header columns of st; output that is not valid JSON is
// refused here, before any store writes it.
func Encode(st *state.RunState) (Header, error) {
	h := Header{Status: string(st.Status), Agent: st.Config.Agent, File: st.Config.SourceFile, Task: st.Task,
		SourceHash: st.Config.SourceHash, Runnable: state.Runnable(st)}
	cfg, err := json.Marshal(st.Config)
	if err != nil {
		return h, fmt.Errorf("encode config: %w", err)
	}
	h.Config = string(cfg)
	if at := state.WakeAt(st); at != nil {
		// An expiry past the storable range (a wait of centuries) is
		// kept as no wake-up: the run waits for a decision as one
		// without a bound does.
		if n, err := Nanos(*at); err == nil {
			h.WakeAt, h.HasWakeAt = n, true
		}
	}
	usage, err := json.Marshal(st.Usage)
	if err != nil {
		return h, fmt.Errorf("encode usage: %w", err)
	}
	h.Usage = string(usage)
	if len(st.Output) > 0 {
		if !json.Valid(st.Output) {
			return h, errors.New("encode output: not valid JSON")
		}
		h.Output, h.HasOutput = string(st.Output), true
	}
	if st.Error != nil {
		b, err := json.Marshal(st.Error)
		if err != nil {
			return h, fmt.Errorf("encode error: %w", err)
		}
		h.Error, h.HasError = string(b), true
	}
	return h, nil
}

// Decode sets the fields of st that h holds (all but the timestamps and
// revision, which are the stores' own columns): the inverse of Encode.
func (h Header) Decode(st *state.RunState) error {
	st.Status = state.Status(h.Status)
	st.Task = h.Task
	if err := json.Unmarshal([]byte(h.Config), &st.Config); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	if err := json.Unmarshal([]byte(h.Usage), &st.Usage); err != nil {
		return fmt.Errorf("decode usage: %w", err)
	}
	if h.HasOutput {
		st.Output = json.RawMessage(h.Output)
	}
	if h.HasError {
		st.Error = new(state.RunError)
		if err := json.Unmarshal([]byte(h.Error), st.Error); err != nil {
			return fmt.Errorf("decode error: %w", err)
		}
	}
	return nil
}

// Message decodes the body of a message row, so every store reports a
// damaged row in the same words.
func Message(seq int, body []byte) (state.Message, error) {
	var m state.Message
	if err := jsonv2.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("decode message %d: %w", seq, err)
	}
	m.Seq = seq
	return m, nil
}

// ProviderItem decodes the body of a provider-item row; a nil Raw saved
// as JSON null loads as nil again.
func ProviderItem(seq int, body []byte) (state.ProviderItem, error) {
	var it state.ProviderItem
	if err := jsonv2.Unmarshal(body, &it); err != nil {
		return it, fmt.Errorf("decode provider item %d: %w", seq, err)
	}
	it.Seq = seq
	it.Raw = nullRaw(it.Raw)
	return it, nil
}

// JournalEntry decodes the body of a journal row; nil Arguments saved as
// JSON null load as nil again.
func JournalEntry(seq int, callID string, body []byte) (state.JournalEntry, error) {
	var e state.JournalEntry
	if err := jsonv2.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("decode journal entry %s: %w", callID, err)
	}
	e.Seq, e.CallID = seq, callID
	e.Arguments = nullRaw(e.Arguments)
	return e, nil
}

// nullRaw maps the JSON null that encoding/json stores for a nil RawMessage
// back to nil, so a nil field loads as nil. Both encode to null again.
func nullRaw(r json.RawMessage) json.RawMessage {
	if string(r) == "null" {
		return nil
	}
	return r
}

// Nanos gives a time as the Unix nanoseconds the stores keep. Times outside
// 1678..2261 cannot be represented and are refused rather than silently
// wrapped.
func Nanos(t time.Time) (int64, error) {
	if t.Year() < 1678 || t.Year() > 2261 {
		return 0, fmt.Errorf("timestamp %s out of the storable range", t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// Time is the inverse of Nanos, in UTC so a loaded run compares equal
// whichever store or time zone it came from.
func Time(n int64) time.Time { return time.Unix(0, n).UTC() }

// SummaryColumns are the columns, in order, that ScanSummary reads: both
// stores' List select them under the same names.
const SummaryColumns = "id, status, agent, file, created_at, updated_at, revision, usage"

// ScanSummary reads one row of SummaryColumns with scan (the Scan method
// of either driver's rows), so both stores turn a list row into a summary
// the same way.
func ScanSummary(scan func(dest ...any) error) (state.Summary, error) {
	var (
		sum              state.Summary
		status           string
		created, updated int64
		usage            string
	)
	if err := scan(&sum.ID, &status, &sum.Agent, &sum.File, &created, &updated, &sum.Revision, &usage); err != nil {
		return sum, err
	}
	// The listing shows what the run cost (nil when unknown); a usage
	// that does not decode is shown as unknown rather than failing the
	// whole listing.
	var u struct {
		CostUSD          *float64 `json:"cost_usd"`
		ProviderRequests int      `json:"provider_requests"`
	}
	if jsonv2.Unmarshal([]byte(usage), &u) == nil {
		switch {
		case u.CostUSD != nil:
			sum.CostUSD = u.CostUSD
		case u.ProviderRequests == 0:
			sum.CostUSD = new(float64) // no request, no cost (state.Usage.Cost)
		}
	}
	sum.Status = state.Status(status)
	sum.CreatedAt, sum.UpdatedAt = Time(created), Time(updated)
	return sum, nil
}

// FileSafe accepts the run ids a file may be named after (lock and log
// files): letters, digits, '_', '-' and '.', not starting with '.', so an
// id never names a path.
func FileSafe(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Saved remembers the header a store handle last wrote for each run, so a
// save whose header differs only in usage writes only usage and updated_at
// (most saves of a running run). Every write of a header column increments
// the revision, so a row still at the remembered revision holds exactly
// the remembered header. The zero value is ready to use.
type Saved struct {
	mu sync.Mutex
	m  map[string]savedAt
}

type savedAt struct {
	revision int64
	header   Header // without Usage
}

// Remember records that h was written for run id at revision rev; a handle
// that has seen many runs forgets them all rather than grow.
func (s *Saved) Remember(id string, rev int64, h Header) {
	h.Usage = ""
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= 1024 {
		s.m = map[string]savedAt{}
	}
	s.m[id] = savedAt{revision: rev, header: h}
}

// UsageOnly reports whether h differs at most in usage from the header
// this handle wrote for run id at revision rev, as far as it knows.
func (s *Saved) UsageOnly(id string, rev int64, h Header) bool {
	h.Usage = ""
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.m[id]
	return ok && prev.revision == rev && prev.header == h
}
