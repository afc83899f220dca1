// Package state holds the durable shape of a run and the store interface:
// what the engine writes and a store persists. It is a leaf package so that
// the stores, the model clients and the engine share these types without
// importing each other.
//
// The invariants the engine keeps over these types are written in
// docs/reference/runtime.md#invariants.
package state

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Status is where a run stands. Every status but the terminal ones can be
// resumed.
type Status string

// The statuses of docs/reference/runtime.md#run-states.
const (
	// StatusQueued is a run submitted for a worker (nexa agent --detach)
	// that no process has started yet: recorded with its task and
	// config, no provider request made.
	StatusQueued          Status = "queued"
	StatusRunning         Status = "running"
	StatusWaitingApproval Status = "waiting_approval"
	// StatusWaitingInput is a run stopped because an MCP server asked for
	// input before it would complete a call (an input_required answer):
	// the call's entry holds the request (JournalEntry.Inputs) until a
	// person answers it (docs/reference/runtime.md#input-requests).
	StatusWaitingInput    Status = "waiting_input"
	StatusUnknownOutcome  Status = "unknown_outcome"
	StatusInterrupted     Status = "interrupted"
	StatusFailed          Status = "failed"
	StatusCompleted       Status = "completed"
	StatusTimedOut        Status = "timed_out"
	StatusBudgetExhausted Status = "budget_exhausted"
)

// Terminal reports whether a run in this status can never continue, so a
// resume must only print its stored result.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusTimedOut, StatusBudgetExhausted:
		return true
	}
	return false
}

// Valid reports whether s is one of the known statuses; the CLI uses it to
// reject a misspelt --status filter instead of silently matching nothing.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaitingApproval, StatusWaitingInput, StatusUnknownOutcome, StatusInterrupted,
		StatusFailed, StatusCompleted, StatusTimedOut, StatusBudgetExhausted:
		return true
	}
	return false
}

// DriverWorker is Config.Driver of a run handed to workers.
const DriverWorker = "worker"

// Runnable reports whether a worker may take the run as it is stored, if
// nobody holds its lease: it is a worker run (Config.Driver) and it is
// queued, running (its holder died, or was stopped at once), interrupted
// (a drained worker's run), waiting for approval with every pending call
// decided, waiting for input with every input request answered, or
// stopped at an unknown outcome with every such call resolved.
// A terminal or failed run, or one that still waits for a person, is not
// runnable. The stores keep this value as a column written with every
// save, so that a claim is one indexed query (docs/worker.md).
func Runnable(st *RunState) bool {
	if st == nil || st.Config.Driver != DriverWorker {
		return false
	}
	switch st.Status {
	case StatusQueued, StatusRunning, StatusInterrupted:
		return true
	case StatusWaitingApproval, StatusWaitingInput, StatusUnknownOutcome:
		for i := range st.Journal {
			if e := &st.Journal[i]; e.Pending() || e.AwaitingInput() || e.Stage == StageStarted {
				return false
			}
		}
		return true
	}
	return false
}

// Stage is the journal stage of one tool call (docs/reference/runtime.md#journal-stages).
type Stage string

// The three journal stages.
const (
	StageNotStarted Stage = "not_started"
	StageStarted    Stage = "started"
	StageCompleted  Stage = "completed"
)

// ProviderIdentity names the model endpoint a run talks to. It is compared on
// resume so that a run never continues against another model. It never holds
// a key.
type ProviderIdentity struct {
	Kind    string `json:"kind"`               // openai, anthropic, script
	BaseURL string `json:"base_url,omitempty"` // empty for script
	Model   string `json:"model"`
	// Digest identifies the content behind the provider where that matters:
	// the sha256 of a script file for the script provider.
	Digest string `json:"digest,omitempty"`
}

// Budgets are fixed when a run starts; zero means unlimited. MaxCostUSD
// alone may be raised by a resume (docs/reference/runtime.md, "Deadline,
// budgets and signals"): money is the budget a person tops up.
type Budgets struct {
	MaxTurns     int `json:"max_turns,omitempty"`
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
	MaxTokens    int `json:"max_tokens,omitempty"`
	// MaxCostUSD bounds what the run's provider requests may cost, in
	// US dollars, by the prices of internal/prices (--max-cost).
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}

// Config is everything a resume must reproduce exactly.
type Config struct {
	SourceFile string           `json:"source_file"`
	SourceHash string           `json:"source_hash"`
	Agent      string           `json:"agent"`
	Provider   ProviderIdentity `json:"provider"`
	Budgets    Budgets          `json:"budgets"`
	// Deadline is start time + timeout; nil when the run has none.
	Deadline *time.Time `json:"deadline,omitempty"`
	WorkDir  string     `json:"work_dir"`
	// Policy names the policy file (--policy) whose rules decided calls of
	// the run, by its content's hash: a resume under another policy is
	// refused, as one under changed sources is. Nil when none was named.
	Policy *PolicyRef `json:"policy,omitempty"`
	// ApprovalTimeout bounds how long any call of the run may wait for a
	// decision (--approval-timeout); zero means no bound but the tool's.
	ApprovalTimeout Seconds `json:"approval_timeout,omitempty"`
	// MCPServers are the MCP servers whose tools the run exposes, with a
	// hash of their tool schemas when the run started: a resume refuses
	// when a server now offers different tools.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// Choice records what chose the provider when the run started, typed
	// (never a key), so that any process can resolve the same provider
	// again without a command line (nexa serve --execute). Nil for runs of
	// an older nexa.
	Choice *ProviderChoice `json:"provider_choice,omitempty"`
	// Driver says who continues the run when it can go on: "" for the
	// command that started it (nexa agent, resumed by a person), or
	// DriverWorker for the pool of nexa worker processes (the run was
	// submitted with --detach or handed over later). Only worker runs
	// are ever claimed by a worker, so a run paused in a terminal never
	// goes on somewhere else unless someone hands it over.
	Driver string `json:"driver,omitempty"`
	// ResumeFlags are what runs of an older nexa recorded instead of Choice:
	// the command-line flags that chose the provider when
	// the run started (never a key): hints to continue the run repeat them,
	// so that the resume resolves to the same provider identity. They are
	// advice for people; the resume check compares Provider.
	ResumeFlags []string `json:"resume_flags,omitempty"`
}

// ProviderChoice is what a command was given to choose a run's provider:
// --provider (openai, anthropic or script:PATH), --model, --base-url and
// --no-stream, as given; empty fields were resolved from the environment,
// the agent and the secrets, and are resolved the same way again.
type ProviderChoice struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	NoStream bool   `json:"no_stream,omitempty"`
}

// PolicyRef identifies the policy a run was started under. Path is where
// it was read (absolute), for messages and for checking an edited
// approval; Hash is what a resume compares.
type PolicyRef struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// Seconds is a duration kept in whole seconds in the store and in JSON.
type Seconds int64

// Duration is s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) * time.Second }

// MCPServer identifies one MCP server of a run and the tools it offered.
type MCPServer struct {
	Spec       string `json:"spec"`
	SchemaHash string `json:"schema_hash"`
}

// Usage counts what a run has consumed, for budgets and for the JSON output.
type Usage struct {
	// InputTokens counts every token of the prompts, cached or not:
	// CachedInputTokens and CacheCreationInputTokens are parts of it.
	InputTokens int `json:"input_tokens"`
	// CachedInputTokens were read from the provider's prompt cache
	// (Anthropic cache_read_input_tokens, OpenAI
	// prompt_tokens_details.cached_tokens), billed at a lower price.
	CachedInputTokens int `json:"cached_input_tokens"`
	// CacheCreationInputTokens were written to the prompt cache
	// (Anthropic cache_creation_input_tokens), billed at a higher price.
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	TotalTokens              int `json:"total_tokens"`
	ProviderRequests         int `json:"provider_requests"`
	ToolCalls                int `json:"tool_calls"`
	// RefusedCalls counts the calls completed as denied (by a person or
	// a policy rule) or expired, so a reader of a long run knows whether
	// any are among the calls it did not load.
	RefusedCalls int `json:"refused_calls,omitempty"`
	// CostUSD is what the requests cost in US dollars by the prices
	// known when they were made, when CostKnown; unknown when the price
	// of any of them was, since a cost that leaves a request out would be
	// a guess. Read it with Cost: a usage of no request costs nothing.
	// In JSON both are cost_usd, a number or null (MarshalJSON); they are
	// values, not a pointer, so that usages compare with ==.
	CostUSD   float64 `json:"-"`
	CostKnown bool    `json:"-"`
}

// Cost is the usage's cost in US dollars and whether it is known: the
// recorded cost, else zero for a usage of no provider request (a run that
// asked nothing spent nothing), else unknown.
func (u Usage) Cost() (float64, bool) {
	if u.CostKnown {
		return u.CostUSD, true
	}
	return 0, u.ProviderRequests == 0
}

// usageFields is Usage without its methods, for its JSON.
type usageFields Usage

// usageJSON is Usage as JSON: its counts and cost_usd.
type usageJSON struct {
	usageFields
	CostUSD *float64 `json:"cost_usd"`
}

// MarshalJSON writes the usage with cost_usd as Cost reads it: a number,
// 0 for a run that made no request, or null when unknown.
func (u Usage) MarshalJSON() ([]byte, error) {
	j := usageJSON{usageFields: usageFields(u)}
	if c, ok := u.Cost(); ok {
		j.CostUSD = &c
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote, so that a usage survives
// the store unchanged: the 0 of a usage of no request is Cost's, not a
// recorded cost.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var j usageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*u = Usage(j.usageFields)
	u.CostUSD, u.CostKnown = 0, false
	if j.CostUSD != nil && (u.ProviderRequests > 0 || *j.CostUSD != 0) {
		u.CostUSD, u.CostKnown = *j.CostUSD, true
	}
	return nil
}

// RoundCost rounds a dollar amount to the nano-dollar, so that sums of
// per-request costs print as the prices add up (0.0003, not
// 0.00030000000000000003).
func RoundCost(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }

// Add accumulates another usage record into u. The cost stays known only
// while both sides know theirs.
func (u *Usage) Add(o Usage) {
	uc, uok := u.Cost()
	oc, ook := o.Cost()
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.OutputTokens += o.OutputTokens
	u.TotalTokens += o.TotalTokens
	u.ProviderRequests += o.ProviderRequests
	u.ToolCalls += o.ToolCalls
	u.RefusedCalls += o.RefusedCalls
	u.CostUSD, u.CostKnown = 0, false
	if uok && ook {
		u.CostUSD, u.CostKnown = RoundCost(uc+oc), true
	}
}

// Roles of a provider-neutral message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one provider-neutral conversation entry; providers convert it to
// their wire format.
type Message struct {
	Seq       int        `json:"seq"`
	Role      string     `json:"role"`
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name are set on role=tool messages.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// IsError marks a tool message that reports a failure (Anthropic sends
	// it as is_error).
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is one call requested by the model, with its arguments exactly as
// the model sent them (they may not even be JSON).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ProviderItem is one saved provider reply: the raw response and its usage,
// kept for audit. It is saved in the same write as the assistant message
// and the journal entries of its calls, so a saved reply is never requested
// again.
type ProviderItem struct {
	Seq       int             `json:"seq"`
	Raw       json.RawMessage `json:"raw"`
	Usage     Usage           `json:"usage"`
	CreatedAt time.Time       `json:"created_at"`
}

// JournalEntry is the durable record of one tool call.
type JournalEntry struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Seq orders entries in the order of the model's calls.
	Seq int `json:"seq"`
	// Turn is the provider request (1-based) whose reply asked for the call.
	Turn int `json:"turn"`
	// Arguments are the validated JSON arguments, or the raw text the model
	// sent when they were not valid JSON (then Valid is false).
	Arguments json.RawMessage `json:"arguments"`
	RawArgs   string          `json:"raw_arguments,omitempty"`
	Valid     bool            `json:"valid"`
	Stage     Stage           `json:"stage"`
	// NeedsApproval is the effective policy when the call was journaled,
	// and Risk the tool's risk level then, so that an operator reading
	// the run sees them without the program.
	NeedsApproval bool   `json:"needs_approval"`
	Risk          string `json:"risk_level,omitempty"`
	// Description and Sandbox are the tool's when the call was journaled,
	// for the same reason: nexa runs show lists pending calls as nexa agent
	// does.
	Description string `json:"description,omitempty"`
	Sandbox     bool   `json:"sandbox,omitempty"`
	// Decision is nil while pending; only an operator, or a policy rule
	// the operator wrote, writes it.
	Decision *bool  `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// DecidedBy and DecidedAt say who recorded the decision and when, so
	// an audit of a run names the person behind every approval: the
	// operator's name given to nexa serve (a token's name or --user), or
	// NEXA_USER (else the account) on a command line, or
	// "policy:<rule name>" for a decision of a policy rule.
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// ApprovedArguments are the arguments a person approved the call
	// with when they edited the model's (Arguments stays what the model
	// proposed); the tool runs with them. EditedBy names that person.
	ApprovedArguments json.RawMessage `json:"approved_arguments,omitempty"`
	EditedBy          string          `json:"edited_by,omitempty"`
	// ExpiresAt is when a pending call stops waiting for a decision
	// (approval_timeout, --approval-timeout); at or after it the call is
	// completed with outcome "expired" by whichever process next touches
	// the run. Nil when the wait is unbounded.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// TaskID is the handle under which the call's work goes on at its
	// MCP server (a task of the Tasks extension), saved as part of the
	// started stage as soon as the server answered with it: a resume
	// polls the task instead of calling the outcome unknown
	// (docs/reference/runtime.md#tasks).
	TaskID string `json:"task_id,omitempty"`
	// Inputs are the rounds in which the call's MCP server answered with
	// input_required instead of a result, oldest first: each holds what
	// the server asked and, once a person answered, the answer, who gave
	// it and when. While the last round has no answer the entry is
	// not_started and waits (AwaitingInput); the answer is sent with a
	// new request (docs/reference/runtime.md#input-requests).
	Inputs []InputRound `json:"input_rounds,omitempty"`
	// Result and Success are set when Stage is completed.
	Result  string `json:"result,omitempty"`
	Success bool   `json:"success"`
	// Structured is the tool's structured result (an MCP tool's
	// structuredContent that passed its output schema), also part of
	// Result; nil when there was none.
	Structured json.RawMessage `json:"structured_content,omitempty"`
	// ResolvedBy names the operator who recorded the outcome of a call
	// whose outcome was unknown (Outcome "resolved"; CompletedAt is when),
	// for the same audit as DecidedBy: a guess about an external effect
	// has an author.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// Outcome says how the entry completed: executed, denied, expired,
	// refused, resolved, reused.
	Outcome     string     `json:"outcome,omitempty"`
	Sandboxed   bool       `json:"sandboxed"`
	Attempts    int        `json:"attempts,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`

	// Stub marks a completed entry loaded for a drive without its body
	// (DriveLoader): only CallID, Seq, Turn and Stage are set. It is
	// never stored, and a store refuses to write a stub, so a partial
	// entry can never replace the whole one it stands for.
	Stub bool `json:"-"`
}

// InputRound is one input_required answer of an MCP server to a call and
// the person's answer to it. The request is kept as the server sent it
// (secret values redacted), so any process can show it and check an
// answer against it; RequestState is the server's opaque state, sent back
// unchanged with the answer.
type InputRound struct {
	// Server is the MCP server's spec, as the run records it.
	Server string `json:"server"`
	// Requests are the server's input requests, by key.
	Requests []InputRequest `json:"requests"`
	// RequestState is the server's requestState, never read by nexa;
	// empty when the server sent none (then none is sent back).
	RequestState string    `json:"request_state,omitempty"`
	AskedAt      time.Time `json:"asked_at"`
	// Responses are the answers as they are sent back (the
	// inputResponses of MCP: per key, an action and, for a form, its
	// content), nil while nobody answered. RespondedBy and RespondedAt
	// name who answered and when, like a decision's DecidedBy.
	Responses   json.RawMessage `json:"responses,omitempty"`
	RespondedBy string          `json:"responded_by,omitempty"`
	RespondedAt *time.Time      `json:"responded_at,omitempty"`
}

// Input request modes: a form the person fills in, or a URL the person
// opens elsewhere (nexa never opens it).
const (
	InputForm = "form"
	InputURL  = "url"
)

// InputRequest is one request of an input round: a form (Schema, the
// JSON Schema of its answer) or a URL the person must visit (URL, and its
// Domain for the person to check before following it).
type InputRequest struct {
	Key     string          `json:"key"`
	Mode    string          `json:"mode"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	URL     string          `json:"url,omitempty"`
	Domain  string          `json:"domain,omitempty"`
}

// Input returns the entry's latest input round, or nil.
func (e *JournalEntry) Input() *InputRound {
	if len(e.Inputs) == 0 {
		return nil
	}
	return &e.Inputs[len(e.Inputs)-1]
}

// AwaitingInput reports whether the entry waits for a person's answer to
// its server's input request.
func (e *JournalEntry) AwaitingInput() bool {
	in := e.Input()
	return e.Stage == StageNotStarted && in != nil && in.RespondedAt == nil
}

// Pending reports whether the entry waits for an operator's decision.
func (e *JournalEntry) Pending() bool {
	return e.Stage == StageNotStarted && e.NeedsApproval && e.Decision == nil
}

// Expired reports whether a pending entry's wait for a decision has run
// out at now (see ExpiresAt).
func (e *JournalEntry) Expired(now time.Time) bool {
	return e.Pending() && e.ExpiresAt != nil && !now.Before(*e.ExpiresAt)
}

// RunArguments are the arguments the call executes with: the approved
// edit when a person made one, else the model's.
func (e *JournalEntry) RunArguments() json.RawMessage {
	if e.ApprovedArguments != nil {
		return e.ApprovedArguments
	}
	return e.Arguments
}

// RunError is the stable error object of the CLI's JSON output.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// RunState is a whole run as the store keeps it.
type RunState struct {
	ID        string    `json:"run_id"`
	Revision  int64     `json:"revision"`
	Status    Status    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Config    Config    `json:"config"`
	Task      string    `json:"task"`

	Messages      []Message      `json:"messages"`
	ProviderItems []ProviderItem `json:"provider_items"`
	Journal       []JournalEntry `json:"journal"`
	Usage         Usage          `json:"usage"`

	// Output is the final answer: a JSON string, or an object for agents
	// that implement a protocol. Nil until completed.
	Output json.RawMessage `json:"output,omitempty"`
	Error  *RunError       `json:"error,omitempty"`

	// Holder is the run's live lease when it was loaded (who is driving
	// it, and until when), for display; nil when nobody holds it.
	Holder *Lease `json:"holder,omitempty"`
	// Lease is the caller's own lease, the fencing token of Save: a store
	// never fills it in on Load, the executor that acquired it does.
	Lease *Lease `json:"-"`
}

// Entry returns the journal entry of a call, or nil.
func (r *RunState) Entry(callID string) *JournalEntry {
	for i := range r.Journal {
		if r.Journal[i].CallID == callID {
			return &r.Journal[i]
		}
	}
	return nil
}

// Delta is what one save changes beyond the run's header (status, usage,
// output, error, updated_at): the store writes only these rows, so a save
// costs what changed and not the size of the run.
type Delta struct {
	// Messages are appended (their Seq values are new).
	Messages []Message
	// ProviderItems are inserted or, by Seq, replaced.
	ProviderItems []ProviderItem
	// Journal entries are inserted or, by CallID, replaced.
	Journal []JournalEntry
	// Verify asks the store to check the consistency of everything it
	// keeps before writing, not only that it is still its own: the
	// runtime sets it on the save that stops a drive in which something
	// that runs with the user's rights (an unsandboxed tool, an MCP
	// server) could have written to the store behind nexa's back
	// (docs/runs.md, "The store"). A store with nothing to check (a
	// server that no tool reaches through the file system) ignores it.
	Verify bool
}

// Summary is one row of a run listing.
type Summary struct {
	ID        string    `json:"run_id"`
	Status    Status    `json:"status"`
	Agent     string    `json:"agent"`
	File      string    `json:"file"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Revision  int64     `json:"revision"`
	// CostUSD is the run's usage.cost_usd: nil when unknown.
	CostUSD *float64 `json:"cost_usd"`
}

// Filter selects runs for List and Prune; zero fields match everything.
type Filter struct {
	Status    Status
	Agent     string
	OlderThan time.Duration // updated_at before now-OlderThan
	Limit     int
	// After, when set, keeps only the runs that come after it in the
	// newest-first order: created before it, or at the same instant with a
	// smaller id. A listing pages by passing the last run it showed, so a
	// run created meanwhile (it sorts first) never shifts a later page.
	After *Cursor
}

// Cursor is a position in the newest-first order of List: the created_at
// and id of a run. created_at never changes, so a cursor stays valid while
// runs are saved, created or deleted.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// CursorOf is the position of a listed run.
func CursorOf(s Summary) Cursor { return Cursor{CreatedAt: s.CreatedAt, ID: s.ID} }

// NewerThan reports whether c comes before o in the newest-first order of
// List: created later, or at the same instant with a larger id.
func (c Cursor) NewerThan(o Cursor) bool {
	if !c.CreatedAt.Equal(o.CreatedAt) {
		return c.CreatedAt.After(o.CreatedAt)
	}
	return c.ID > o.ID
}

// String encodes the cursor as an opaque token for a command line or a
// URL: base64url of "NANOS/ID". Callers must not build or read it.
func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixNano(), 10) + "/" + c.ID))
}

// ErrBadCursor is wrapped by ParseCursor for a token String did not make.
var ErrBadCursor = errors.New("not a cursor printed by nexa runs list")

// ParseCursor reads a token made by Cursor.String.
func ParseCursor(tok string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return Cursor{}, fmt.Errorf("cursor %q: %w", tok, ErrBadCursor)
	}
	nanos, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || id == "" {
		return Cursor{}, fmt.Errorf("cursor %q: %w", tok, ErrBadCursor)
	}
	return Cursor{CreatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// Omitted counts the rows of a run a tail load left out.
type Omitted struct {
	Messages      int `json:"messages"`
	ProviderItems int `json:"provider_items"`
	Journal       int `json:"journal"`
}

// TailLoader is a Store that can read a run's header with only the end of
// its rows, so showing a long run costs what is shown, not the run's size.
// LoadTail returns the last n messages, provider items and journal entries
// (by seq) plus every journal entry that is not completed (pending and
// unknown calls are always whole), in the order Load gives them, and how
// many rows of each it left out; n <= 0 loads everything, as Load.
type TailLoader interface {
	LoadTail(ctx context.Context, id string, n int) (*RunState, Omitted, error)
}

// HeaderLoader is a Store that can read a run's header alone (status,
// config, task, usage, output, error, timestamps, revision, holder) with
// no rows, for a caller that needs only those: its Messages,
// ProviderItems and Journal are empty. A missing run is ErrNotFound.
type HeaderLoader interface {
	LoadHeader(ctx context.Context, id string) (*RunState, error)
}

// DriveLoader is a Store that can read a run for an executor that is
// about to continue it, leaving out what a drive never reads:
//
//   - the bodies of the provider items: a drive appends items after the
//     stored ones and needs only their number, and no provider is sent
//     them (a request carries the messages);
//   - the bodies of the completed journal entries of earlier replies: a
//     drive needs their call ids (a new call never reuses one) and their
//     stage, and reads the results only of the latest reply's calls (its
//     tool messages) and of calls not completed.
//
// LoadForDrive returns what Load returns, except that each ProviderItem
// carries only its Seq and each completed JournalEntry whose Turn is below
// the journal's largest is a Stub. Both stay whole in the store for audit,
// display and export. A missing run is ErrNotFound.
//
// It earns its keep on the figure a user waits for: resuming a run paused
// after 2,000 steps (bench/resume.sh, binaries alternated) took 25-30 ms
// with it and 38-42 ms with the run loaded whole, so it saves about a
// third of the resume. The project keeps such a shortcut only while it
// buys 20 % or more of a figure a user sees; measure again before
// changing it.
type DriveLoader interface {
	LoadForDrive(ctx context.Context, id string) (*RunState, error)
}

// HintFlags are the flags a command that continues the run must repeat,
// for the resume commands shown to people: the provider choice the run
// recorded (--provider, --model, --base-url, --no-stream) and its policy
// (--policy, relative to the run's working directory when inside it). A
// run of an older nexa, which recorded no choice, gives the flags it
// recorded instead. They are advice for people: nexa never runs them.
func (c *Config) HintFlags() []string {
	if c.Choice == nil {
		return c.ResumeFlags
	}
	var out []string
	for _, f := range [][2]string{{"--provider", c.Choice.Provider}, {"--model", c.Choice.Model}, {"--base-url", c.Choice.BaseURL}} {
		if f[1] != "" {
			out = append(out, f[0], f[1])
		}
	}
	if c.Choice.NoStream {
		out = append(out, "--no-stream")
	}
	if c.Policy != nil {
		p := c.Policy.Path
		if rel, err := filepath.Rel(c.WorkDir, p); err == nil && filepath.IsLocal(rel) {
			p = rel
		}
		out = append(out, "--policy", p)
	}
	return out
}
