package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/nexa-run/nexa/internal/state"
)

// DefaultScriptModel is the model name a script reports when its file
// names none, so that a run's identity always has a model.
const DefaultScriptModel = "scripted"

// Script is an offline, deterministic provider that answers from a JSON file
// of turns. It exists so that demos, tests and CI can drive the whole agent
// loop (tool calls, approvals, resume) without a network or a model.
//
// The file format (docs/providers.md has the long version):
//
//	{
//	  "model": "scripted",
//	  "turns": [
//	    {"tool_calls": [{"id": "call_1", "name": "record_review",
//	                     "arguments": {"content": "looks good"}}]},
//	    {"content": "Done.", "usage": {"input_tokens": 10, "output_tokens": 2}}
//	  ]
//	}
//
// A turn has "content" (text), "tool_calls", or both; optionally "usage"
// ({"input_tokens", "output_tokens", "total_tokens"}), "finish_reason", or
// instead an "error" that simulates a provider failure. A tool call has a
// "name", an optional "id" (default call_<turn>_<index>, both 1-based) and
// "arguments": a JSON object (sent as its compact text), a JSON string
// (sent verbatim, so malformed arguments can be tested), or absent ("{}").
//
// Which turn answers is derived from the request alone, by counting the
// assistant messages already in the conversation: the first turn answers a
// fresh conversation, the second the conversation after the first reply,
// and so on.
// That makes a Script stateless and resume-safe: a resumed run asks for the
// same turn its crashed predecessor would have asked for.
//
// An error turn, {"error": {"status": 500, "message": "...", "times": 2}},
// fails the request with the *Error a real server with that status would
// produce (429 and 5xx are transient). With "times": n only the first n
// requests for that turn in this process fail and the turn's content or
// tool calls answer afterwards; without it (or 0) every request fails. The
// counter lives in memory, so it is deterministic within one process and
// starts again in a new one.
type Script struct {
	path  string
	model string
	sum   string
	// data is the file; spans locate each turn's object in it. A turn is
	// decoded and checked the first time a request reaches it (turns),
	// so that a resume at turn 2,000 does not decode the 1,999 turns
	// before it (docs/providers.md, "Errors in the file").
	data  []byte
	spans []turnSpan

	mu       sync.Mutex
	turns    []*scriptTurn // decoded turns, by index (nil: not yet)
	bad      []error       // turns that failed to decode or check
	failures map[int]int   // turn index → error replies given so far
	seen     seenPrefix
	// check runs once, for the turns a run can still reach (see
	// ScriptCheck); checkErr is the first wrong one's error.
	check    sync.Once
	checkErr *Error
}

// turnSpan is where one turn's JSON object lies in the file.
type turnSpan struct{ start, end int64 }

// seenPrefix is what Complete counted in the conversation of its last
// request: a run's next request is the same conversation with a few
// messages appended, so only those are counted again and a reply costs
// the same at turn 2,000 as at turn 2. base points at the first message
// of that request's backing array; holding it keeps the array alive, so a
// request with the same base and at least n messages extends the same
// conversation (the runtime only ever appends to it).
type seenPrefix struct {
	base       *state.Message
	n          int
	last       state.Message // msgs[n-1] as counted, a check against edits in place
	assistants int
	bytes      int
}

// count returns the number of assistant messages and the estimated bytes
// of msgs, counting only what is new since the last request when msgs
// extends it.
func (s *Script) count(msgs []state.Message) (assistants, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := 0
	if n := s.seen.n; n > 0 && len(msgs) >= n && s.seen.base == &msgs[0] && sameMessage(msgs[n-1], s.seen.last) {
		from, assistants, bytes = s.seen.n, s.seen.assistants, s.seen.bytes
	}
	for _, m := range msgs[from:] {
		if m.Role == state.RoleAssistant {
			assistants++
		}
		bytes += messageBytes(m)
	}
	s.seen = seenPrefix{n: len(msgs), assistants: assistants, bytes: bytes}
	if len(msgs) > 0 {
		s.seen.base, s.seen.last = &msgs[0], msgs[len(msgs)-1]
	}
	return assistants, bytes
}

// sameMessage compares what the estimate counts of two messages.
func sameMessage(a, b state.Message) bool {
	return a.Seq == b.Seq && a.Role == b.Role && a.Content == b.Content && len(a.ToolCalls) == len(b.ToolCalls) && messageBytes(a) == messageBytes(b)
}

// scriptTurn is one parsed turn, ready to answer.
type scriptTurn struct {
	Content      string           `json:"content"`
	ToolCalls    []scriptCall     `json:"tool_calls"`
	Usage        *scriptUsage     `json:"usage"`
	FinishReason string           `json:"finish_reason"`
	Error        *scriptError     `json:"error"`
	calls        []state.ToolCall // resolved from ToolCalls
}

// scriptCall is a tool call as written in the file.
type scriptCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// scriptUsage overrides the estimated token counts of a turn.
type scriptUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// scriptError simulates a provider failure.
type scriptError struct {
	Status     int     `json:"status"`
	Kind       string  `json:"kind"`
	Message    string  `json:"message"`
	Transient  *bool   `json:"transient"`
	RetryAfter float64 `json:"retry_after"` // seconds
	Times      int     `json:"times"`
}

// ScriptCheck says when a script's turns are decoded and checked.
type ScriptCheck int

const (
	// CheckEveryTurn checks every turn when the script is read, so that
	// a script with a wrong turn anywhere fails before a run is created
	// and before any tool runs: what a new run wants.
	CheckEveryTurn ScriptCheck = iota
	// CheckFromFirstRequest checks, on the first request, that turn and
	// every turn after it, and nothing before. A resume continues a run
	// whose earlier turns have already answered (and were checked when
	// they did), so a resume at turn 2,000 does not decode 1,999 turns it
	// will never use, and a wrong turn still fails before the resumed run
	// executes anything.
	CheckFromFirstRequest
)

// NewScript reads a script file and checks its shape: JSON syntax
// anywhere in the file, the top-level fields, and that "turns" is an array
// of objects. Those problems are reported here, with the file's path and
// the line and column, so that a file that is not a script fails before a
// run is created. What a turn says (its fields, their types, a turn that
// says nothing) is checked as check says, and reported with the same kind
// of position.
func NewScript(path string, check ScriptCheck) (*Script, error) {
	data, err := readScriptFile(path, MaxScriptBytes)
	if err != nil {
		return nil, err
	}
	s, err := parseScript(path, data)
	if err != nil {
		return nil, err
	}
	if check == CheckEveryTurn {
		if err := s.checkFrom(0); err != nil {
			return nil, errors.New(err.Message)
		}
		s.check.Do(func() {})
	}
	return s, nil
}

// MaxScriptBytes bounds a script file (docs/reference/cli.md#size-limits). A
// script is written by hand or by a test; a larger file is a mistake or a
// device such as /dev/zero, refused at once rather than read into memory
// without end.
const MaxScriptBytes = 16 << 20

// readScriptFile reads at most limit bytes of path and refuses a file that
// holds more, so nothing unbounded is ever read.
func readScriptFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("script %s is over %s, the limit for a script file", path, sizeText(limit))
	}
	return data, nil
}

// sizeText writes a limit for people: whole MiB when it is one, else bytes.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkFrom decodes and checks turn i and every turn after it, and
// returns the first wrong one's error.
func (s *Script) checkFrom(i int) *Error {
	for ; i < len(s.spans); i++ {
		if _, err := s.turn(i); err != nil {
			e, _ := AsError(err)
			return e
		}
	}
	return nil
}

// checkOnce checks, on the first request, turn idx and every turn after
// it (CheckFromFirstRequest); later requests get the same answer.
func (s *Script) checkOnce(idx int) error {
	s.check.Do(func() { s.checkErr = s.checkFrom(idx) })
	if s.checkErr != nil {
		return s.checkErr
	}
	return nil
}

// topFields lists the fields of a script file, for messages.
const topFields = "known: model, turns; in a turn: content, tool_calls, usage, finish_reason, error; in a tool call: id, name, arguments"

// parseScript checks the shape of a script file and locates its turns in
// one pass over the bytes, without decoding the turns.
func parseScript(path string, data []byte) (*Script, error) {
	sum := sha256.Sum256(data)
	s := &Script{
		path:     path,
		sum:      "sha256:" + hex.EncodeToString(sum[:]),
		data:     data,
		failures: map[int]int{},
	}
	fail := func(off int64, err error) (*Script, error) {
		return nil, scriptErr(path, data, &posError{off: off, err: err})
	}
	// Duplicate names and bytes that are not UTF-8 are left to the
	// decoding of each turn, which accepts them as it always did.
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	syntax := func(err error) (*Script, error) {
		var se *jsontext.SyntacticError
		switch {
		case errors.As(err, &se) && errors.Is(se.Err, io.ErrUnexpectedEOF):
			return fail(int64(len(data)), errors.New("unexpected end of JSON"))
		case errors.As(err, &se):
			return fail(se.ByteOffset, se.Err)
		case errors.Is(err, io.EOF) && dec.InputOffset() == 0:
			return fail(0, errors.New("empty file; a script is {\"model\": ..., \"turns\": [...]}"))
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return fail(int64(len(data)), errors.New("unexpected end of JSON"))
		}
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return syntax(err)
	}
	if tok.Kind() != '{' {
		return fail(nextValue(data, 0), errors.New("a script is a JSON object: {\"model\": ..., \"turns\": [...]}"))
	}
	seenTurns := false
	for dec.PeekKind() != '}' {
		keyOff := nextValue(data, dec.InputOffset())
		tok, err := dec.ReadToken()
		if err != nil {
			return syntax(err)
		}
		name := tok.String()
		valOff := nextValue(data, dec.InputOffset())
		switch name {
		case "model":
			v, err := dec.ReadValue()
			if err != nil {
				return syntax(err)
			}
			if v.Kind() != '"' {
				return fail(valOff, fmt.Errorf("model: expected string, found JSON %s", kindName(v.Kind())))
			}
			if err := json.Unmarshal(v, &s.model); err != nil {
				return fail(valOff, fmt.Errorf("model: %w", err))
			}
		case "turns":
			if dec.PeekKind() == 'n' {
				if _, err := dec.ReadToken(); err != nil {
					return syntax(err)
				}
				continue
			}
			if k := dec.PeekKind(); k != '[' {
				if k == 0 { // a syntax error: let the read name it
					_, err := dec.ReadValue()
					return syntax(err)
				}
				return fail(valOff, fmt.Errorf("turns: expected array, found JSON %s", kindName(k)))
			}
			seenTurns = true
			if _, err := dec.ReadToken(); err != nil {
				return syntax(err)
			}
			s.spans = s.spans[:0]
			for dec.PeekKind() != ']' {
				off := nextValue(data, dec.InputOffset())
				v, err := dec.ReadValue()
				if err != nil {
					return syntax(err)
				}
				if v.Kind() != '{' {
					return fail(off, fmt.Errorf("turn %d: expected a JSON object, found JSON %s", len(s.spans)+1, kindName(v.Kind())))
				}
				s.spans = append(s.spans, turnSpan{start: off, end: off + int64(len(v))})
			}
			if _, err := dec.ReadToken(); err != nil {
				return syntax(err)
			}
		default:
			return fail(keyOff, fmt.Errorf("unknown field %q (%s)", name, topFields))
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return syntax(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return fail(nextValue(data, dec.InputOffset()), errors.New("unexpected data after the script's JSON object"))
	}
	if !seenTurns {
		return nil, fmt.Errorf("script %s: no \"turns\" array; a script is {\"model\": ..., \"turns\": [...]}", path)
	}
	if s.model == "" {
		s.model = DefaultScriptModel
	}
	s.turns, s.bad = make([]*scriptTurn, len(s.spans)), make([]error, len(s.spans))
	return s, nil
}

// nextValue skips the white space and separators from off to where the
// next token of data starts.
func nextValue(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

// kindName names a JSON kind as encoding/json's messages do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// turn returns turn i (0-based), decoding and checking it the first time
// it is asked for; a turn that is wrong fails the same way every time.
func (s *Script) turn(i int) (*scriptTurn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.turns[i]; t != nil {
		return t, nil
	}
	if err := s.bad[i]; err != nil {
		return nil, err
	}
	sp := s.spans[i]
	t := &scriptTurn{}
	err := decodeStrict(s.data[sp.start:sp.end], sp.start, t)
	if err == nil {
		if err = t.resolve(i); err == nil {
			s.turns[i] = t
			return t, nil
		}
		err = fmt.Errorf("script %s:%s: turn %d: %w", s.path, lineCol(s.data, sp.start), i+1, err)
	} else {
		err = scriptErr(s.path, s.data, fmt.Errorf("turn %d: %w", i+1, err))
	}
	err = &Error{Kind: KindScriptInvalid, Message: err.Error()}
	s.bad[i] = err
	return nil, err
}

// resolve checks a turn and computes its tool calls.
func (t *scriptTurn) resolve(i int) error {
	if t.Content == "" && len(t.ToolCalls) == 0 && t.Error == nil {
		return errors.New(`the turn says nothing; give "content", "tool_calls" or "error"`)
	}
	if e := t.Error; e != nil {
		if e.Status == 0 && e.Kind == "" {
			return errors.New(`"error" needs a "status" (e.g. 500) or a "kind"`)
		}
		if e.Times < 0 {
			return errors.New(`"error"."times" must not be negative`)
		}
		if e.Times > 0 && t.Content == "" && len(t.ToolCalls) == 0 {
			return errors.New(`an "error" with "times" needs "content" or "tool_calls" to answer once the failures are used up`)
		}
	}
	if u := t.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalTokens < 0) {
		return errors.New(`"usage" counts must not be negative`)
	}
	seen := map[string]bool{}
	for j, c := range t.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d has no \"name\"", j+1)
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		if seen[id] {
			return fmt.Errorf("tool call id %q is used twice", id)
		}
		seen[id] = true
		args, err := scriptArguments(c.Arguments)
		if err != nil {
			return fmt.Errorf("tool call %d (%s): %w", j+1, c.Name, err)
		}
		t.calls = append(t.calls, state.ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	return nil
}

// scriptArguments turns the "arguments" value of a call into the text the
// model would have sent: a string verbatim, any other JSON value compacted.
func scriptArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	return buf.String(), nil
}

// decodeStrict decodes one JSON value refusing unknown fields and trailing
// data; base is the value's offset in the file, added to error offsets.
func decodeStrict(data []byte, base int64, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return &posError{off: base + se.Offset, err: err}
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "value"
			}
			return &posError{off: base + te.Offset, err: fmt.Errorf("%s: expected %s, found JSON %s", field, te.Type, te.Value)}
		case errors.Is(err, io.EOF):
			return &posError{off: base, err: errors.New("empty file; a script is {\"model\": ..., \"turns\": [...]}")}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &posError{off: base + int64(len(data)), err: errors.New("unexpected end of JSON")}
		}
		off := base + dec.InputOffset()
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			// Point at the field's key rather than past its value.
			if i := bytes.Index(data, []byte(name)); i >= 0 {
				off = base + int64(i)
			}
		}
		return &posError{off: off, err: unknownFieldHint(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &posError{off: base + dec.InputOffset(), err: errors.New("unexpected data after the script's JSON object")}
	}
	return nil
}

// unknownFieldHint rewords encoding/json's unknown-field error to list the
// fields a script knows.
func unknownFieldHint(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s (%s)", name, topFields)
	}
	return err
}

// posError is a decoding error at a byte offset of the file.
type posError struct {
	off int64
	err error
}

// Error is the message without the position; scriptErr adds it.
func (e *posError) Error() string { return e.err.Error() }

// Unwrap exposes the decoding error.
func (e *posError) Unwrap() error { return e.err }

// scriptErr formats a decoding error as path:line:col: message.
func scriptErr(path string, data []byte, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return fmt.Errorf("script %s:%s: %w", path, lineCol(data, pe.off), err)
	}
	return fmt.Errorf("script %s: %w", path, err)
}

// lineCol renders a byte offset as 1-based "line:column".
func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// Identity names the script by kind, model and the sha256 of the file, so a
// run never resumes against an edited script.
func (s *Script) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "script", Model: s.model, Digest: s.sum}
}

// Turns reports how many turns the script has; tests and the CLI use it to
// describe a script.
func (s *Script) Turns() int { return len(s.spans) }

// Complete answers with the turn selected by the number of assistant
// messages in the request. It never touches the network; when req.Stream is
// set the content is also reported through progress in word-sized pieces so
// that demos look like a streaming model.
func (s *Script) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, fmt.Errorf("script provider: %w", err)
	}
	idx, inBytes := s.count(req.Messages)
	if idx >= len(s.spans) {
		return Reply{}, &Error{
			Kind: KindScriptExhausted,
			Message: fmt.Sprintf("script %s has %d turn(s) and the conversation already has %d assistant message(s), so there is no turn %d to answer with; add turns to the script",
				s.path, len(s.spans), idx, idx+1),
		}
	}
	if err := s.checkOnce(idx); err != nil {
		return Reply{}, err
	}
	t, err := s.turn(idx)
	if err != nil {
		return Reply{}, err
	}
	if t.Error != nil {
		if err := s.fail(idx, t.Error); err != nil {
			return Reply{}, err
		}
	}

	msg := state.Message{
		Role:      state.RoleAssistant,
		Content:   t.Content,
		ToolCalls: append([]state.ToolCall(nil), t.calls...),
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "stop"
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := estimateUsage(inBytes, msg)
	if u := t.Usage; u != nil {
		usage.InputTokens, usage.OutputTokens = u.InputTokens, u.OutputTokens
		usage.TotalTokens = u.TotalTokens
		if usage.TotalTokens == 0 {
			usage.TotalTokens = u.InputTokens + u.OutputTokens
		}
	}

	if req.Stream && progress != nil && msg.Content != "" {
		for _, piece := range splitWords(msg.Content) {
			progress(Event{TextDelta: piece})
		}
	}

	raw, err := json.Marshal(scriptRaw{
		Provider:     "script",
		Model:        s.model,
		Turn:         idx + 1,
		Message:      msg,
		FinishReason: finish,
		Usage:        usage,
	})
	if err != nil {
		return Reply{}, fmt.Errorf("script provider: encode reply: %w", err)
	}
	reply := Reply{Message: msg, Raw: raw, Usage: usage, FinishReason: finish}
	// A script is held to the rules of a real server's reply, so that a
	// run on a script cannot complete on a reply a server's would fail.
	if err := checkReply(reply, "tool_calls"); err != nil {
		return Reply{}, err
	}
	return reply, nil
}

// scriptRaw is what a script reply records as its raw response.
type scriptRaw struct {
	Provider     string        `json:"provider"`
	Model        string        `json:"model"`
	Turn         int           `json:"turn"`
	Message      state.Message `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Usage        state.Usage   `json:"usage"`
}

// fail returns the simulated failure of an error turn, or nil once a turn
// with "times" has failed that often.
func (s *Script) fail(idx int, e *scriptError) error {
	if e.Times > 0 {
		s.mu.Lock()
		n := s.failures[idx]
		if n >= e.Times {
			s.mu.Unlock()
			return nil
		}
		s.failures[idx] = n + 1
		s.mu.Unlock()
	}
	kind, transient := classifyStatus(e.Status)
	if e.Kind != "" {
		kind = e.Kind
	}
	if e.Transient != nil {
		transient = *e.Transient
	}
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("simulated failure of script turn %d", idx+1)
	}
	return &Error{
		Kind:       kind,
		Status:     e.Status,
		Transient:  transient,
		RetryAfter: time.Duration(e.RetryAfter * float64(time.Second)),
		Message:    msg,
	}
}

// estimateUsage is the deterministic token estimate of a script reply: a
// token per four bytes of text, rounded up, so budgets can be exercised
// without a tokenizer.
// inBytes is the request's messageBytes.
func estimateUsage(inBytes int, out state.Message) state.Usage {
	u := state.Usage{
		InputTokens:      (inBytes + 3) / 4,
		OutputTokens:     (messageBytes(out) + 3) / 4,
		ProviderRequests: 1,
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// messageBytes is the text of a message that the usage estimate counts.
func messageBytes(m state.Message) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// splitWords cuts text after each run of spaces, keeping every byte.
func splitWords(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' || text[i] == '\n' {
			j := i
			for j+1 < len(text) && (text[j+1] == ' ' || text[j+1] == '\n') {
				j++
			}
			out = append(out, text[start:j+1])
			start = j + 1
			i = j
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}
