package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/nexa-run/nexa/internal/state"
)

// DefaultAnthropicBaseURL is where an Anthropic provider sends requests when
// no base URL is configured. It is the API root without /v1: the client
// appends v1/messages.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// DefaultAnthropicMaxTokens is the max_tokens sent when neither the request
// nor the configuration sets one: the Messages API requires the field, and
// this is large enough for a tool call or a final answer without letting a
// runaway reply cost much.
const DefaultAnthropicMaxTokens = 4096

// AnthropicJSONInstruction is appended to the system prompt when a request
// asks for JSON output without a protocol: the Messages API has no
// JSON-object mode, so the model is asked in words and the runtime checks
// the answer as it does for any provider.
const AnthropicJSONInstruction = JSONInstruction

// AnthropicAnswerTool is the tool through which an Anthropic model gives an
// answer that implements a protocol: its input_schema is the protocol's
// schema, so the model fills exactly the protocol's fields, and the call's
// input becomes the final answer (docs/providers.md, "Structured answers").
const AnthropicAnswerTool = "final_answer"

// anthropicRequestTimeout is the per-attempt timeout given to the SDK. Left
// unset, the SDK caps a non-streamed request at 10 minutes and refuses one
// whose max_tokens it thinks too large to finish in that time; the run's
// deadline (the context) and the transport's response-header timeout are
// what should decide, so the SDK's own limit is pushed out of the way.
const anthropicRequestTimeout = 24 * time.Hour

// AnthropicConfig is everything an Anthropic Messages endpoint needs. The CLI
// resolves it from flags, environment and secrets (docs/reference/runtime.md#provider-resolution); this
// package reads no environment variable itself (not ANTHROPIC_API_KEY, not
// ANTHROPIC_BASE_URL), so a key meant for one server can never leak to
// another.
type AnthropicConfig struct {
	// BaseURL of the API root, without /v1 (e.g. https://api.anthropic.com
	// or a proxy's root); empty means DefaultAnthropicBaseURL.
	BaseURL string
	// APIKey is sent in the x-api-key header; empty sends no key (a local
	// proxy that authenticates by itself).
	APIKey string
	// Model is the model name sent when a Request names none.
	Model string
	// HTTPClient replaces the default client (tests, proxies); nil uses a
	// client whose only timeout is on response headers, since streams
	// may legitimately run for minutes.
	HTTPClient *http.Client
	// MaxTokens is sent when a Request sets none (the API requires
	// max_tokens); 0 means DefaultAnthropicMaxTokens.
	MaxTokens int
}

// Anthropic talks to the Anthropic Messages API (POST {base}/v1/messages)
// through the official anthropic-sdk-go client, with the client's own
// retries, telemetry and environment lookups disabled: WithRetry and the
// runtime own retries so they can respect the run's deadline, and the CLI
// owns configuration.
type Anthropic struct {
	cfg AnthropicConfig
	// httpAPI holds the base URL and the key redaction and error wording
	// shared with OpenAI (http.go).
	httpAPI
	svc anthropic.MessageService
}

// NewAnthropic checks cfg and builds a provider. It fails on a missing model
// or a base URL that is not an absolute http(s) URL, so a misconfiguration is
// reported before a run is created.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic provider: no model configured; pass --model or set NEXA_MODEL")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic provider: max tokens %d is negative", cfg.MaxTokens)
	}
	base, err := checkBaseURL("anthropic", cfg.BaseURL, DefaultAnthropicBaseURL, DefaultAnthropicBaseURL, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	lim := defaultReplyLimits()
	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(httpClient(cfg.HTTPClient, lim)),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(anthropicRequestTimeout),
		// Explicit, so that no ANTHROPIC_OPEN_TELEMETRY* variable is
		// consulted and no trace header is added to requests.
		option.WithoutOpenTelemetry(),
		option.WithOpenTelemetryPropagation(false),
	}
	if cfg.APIKey != "" {
		// The Messages API's key header. The SDK's WithAPIKey sends the
		// key as a bearer token instead, which is for OAuth tokens.
		opts = append(opts, option.WithHeader("x-api-key", cfg.APIKey))
	}
	// NewMessageService, unlike anthropic.NewClient, reads no ANTHROPIC_*
	// variable, profile or credential file: configuration comes from cfg
	// only.
	api := httpAPI{
		name: "anthropic", baseURL: base, apiKey: cfg.APIKey,
		keyHint: "ANTHROPIC_API_KEY (or NEXA_API_KEY, or API_KEY in the anthropic block of secrets.nxs)",
		notFound: fmt.Sprintf("%s/v1/messages was not found; check --base-url (an Anthropic base URL is the API root without /v1, e.g. %s)",
			base, DefaultAnthropicBaseURL),
		overloadedStatus: 529, // Anthropic's "overloaded"
		limits:           lim,
		sdkStatus:        anthropicStatus,
	}
	return &Anthropic{cfg: cfg, httpAPI: api, svc: anthropic.NewMessageService(opts...)}, nil
}

// Identity names the endpoint (kind, base URL, model) and never the key.
func (a *Anthropic) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "anthropic", BaseURL: a.baseURL, Model: a.cfg.Model}
}

// Complete sends one Messages request, streamed when req.Stream is set, and
// returns the complete reply or an *Error classified for retries.
func (a *Anthropic) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	params, err := a.params(req)
	if err != nil {
		return Reply{}, &Error{Kind: KindInvalidRequest, Message: a.redact(err.Error())}
	}
	model := string(params.Model)
	var res *http.Response
	opts := []option.RequestOption{option.WithResponseBodyInto(&res)}
	if req.Stream {
		opts = append(opts, option.WithJSONSet("stream", true), option.WithHeader("Accept", "text/event-stream"))
	}
	// The body is read here, not by the SDK, so that the reply saved in
	// the run is the bytes the server sent and a stream is assembled by
	// the rules of this package.
	if _, err := a.svc.New(ctx, params, opts...); err != nil {
		return Reply{}, a.classify(ctx, err, res, model)
	}
	if res == nil || res.Body == nil {
		return Reply{}, errNoBody()
	}
	defer res.Body.Close()

	var reply Reply
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	// A server that ignores "stream": true answers with a plain message,
	// and one that streams unasked sends events: take each as it is. Any
	// other body (an HTML page from a wrong base URL) is reported as not
	// being a message rather than as a cut stream, which would be retried.
	if mt == "text/event-stream" || (req.Stream && mt == "") {
		reply, err = a.stream(ctx, res, progress)
	} else {
		var body []byte
		body, err = io.ReadAll(res.Body)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return Reply{}, fmt.Errorf("anthropic response: %w", ctxErr)
			}
			return Reply{}, a.transportError(fmt.Errorf("read response: %w", err))
		}
		reply, err = a.replyFromBody(body, res.Header.Get("Content-Type"))
	}
	if err != nil {
		return Reply{}, err
	}
	if err := checkReply(reply, "tool_use"); err != nil {
		return Reply{}, err
	}
	if req.Output != nil && a.answerTool(req) != nil {
		takeAnswer(&reply)
	}
	reply.Raw = validUTF8JSON(redactJSON(reply.Raw, a.cfg.APIKey))
	return reply, nil
}

// anthropicTurn is one message of the wire conversation while it is being
// built: consecutive neutral messages of the same wire role are merged into
// one, since the API requires user and assistant to alternate.
type anthropicTurn struct {
	role string // "user" or "assistant"
	// results are tool_result blocks; they go first in a user message,
	// as the API requires them right after the assistant's tool_use.
	results []anthropic.ContentBlockParamUnion
	blocks  []anthropic.ContentBlockParamUnion
}

// params converts a provider-neutral request to the Messages wire format.
func (a *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = a.cfg.Model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = a.cfg.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: int64(maxTokens)}

	var turns []*anthropicTurn
	turn := func(role string) *anthropicTurn {
		if n := len(turns); n > 0 && turns[n-1].role == role {
			return turns[n-1]
		}
		t := &anthropicTurn{role: role}
		turns = append(turns, t)
		return t
	}
	for i, m := range req.Messages {
		switch m.Role {
		case state.RoleSystem:
			// Every system message, wherever it is, joins the system
			// parameter: the Messages API has no system role in the
			// conversation.
			if hasText(m.Content) {
				p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case state.RoleUser:
			// The API rejects empty text blocks; an empty message
			// says nothing and is left out.
			if hasText(m.Content) {
				t := turn("user")
				t.blocks = append(t.blocks, anthropic.NewTextBlock(m.Content))
			}
		case state.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if hasText(m.Content) {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return p, fmt.Errorf("message %d: a tool call to %s has no id", i+1, c.Name)
				}
				input, ok := toolInput(c.Arguments)
				if !ok {
					// A call the runtime refused for its arguments:
					// tool_use input must be an object, so the call
					// is sent with {} and what the model really wrote
					// stays in the conversation as text, next to the
					// error result the runtime recorded for it.
					blocks = append(blocks, anthropic.NewTextBlock(fmt.Sprintf(
						"(The arguments of tool call %s to %s were not a JSON object and were not sent: %s)", c.ID, c.Name, c.Arguments)))
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) > 0 {
				t := turn("assistant")
				t.blocks = append(t.blocks, blocks...)
			}
		case state.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("message %d: a tool message has no tool_call_id", i+1)
			}
			r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if hasText(m.Content) {
				r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			if m.IsError {
				r.IsError = anthropic.Bool(true)
			}
			t := turn("user")
			t.results = append(t.results, anthropic.ContentBlockParamUnion{OfToolResult: &r})
		default:
			return p, fmt.Errorf("message %d: unknown role %q", i+1, m.Role)
		}
	}
	for _, t := range turns {
		content := append(t.results, t.blocks...)
		if t.role == "user" {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(content...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(content...))
		}
	}
	answerTool := a.answerTool(req)
	switch {
	case answerTool != nil:
		p.System = append(p.System, anthropic.TextBlockParam{Text: fmt.Sprintf(
			"Give your final answer by calling the tool %s once, with the answer as its input (it implements protocol %s); do not write the answer as text.",
			AnthropicAnswerTool, req.Output.Name)})
	case req.Output != nil || req.JSONOutput:
		p.System = append(p.System, anthropic.TextBlockParam{Text: jsonInstruction(req.Output)})
	}

	for _, t := range req.Tools {
		schema, err := anthropicSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	switch req.ToolChoice {
	case "":
		// The server's default: auto when tools are offered.
	case "auto", "required", "none":
		if len(req.Tools) > 0 {
			switch req.ToolChoice {
			case "auto":
				p.ToolChoice.OfAuto = &anthropic.ToolChoiceAutoParam{}
			case "required":
				p.ToolChoice.OfAny = &anthropic.ToolChoiceAnyParam{}
			case "none":
				// The tools stay defined: the API refuses a
				// conversation with tool_use blocks and no tools.
				p.ToolChoice.OfNone = &anthropic.ToolChoiceNoneParam{}
			}
		}
	default:
		return p, fmt.Errorf("tool choice %q is not auto, required or none", req.ToolChoice)
	}
	if answerTool != nil {
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: answerTool})
		// The answer tool is forced when it is the only tool (or the
		// agent asked for no tool call); beside the agent's tools, some
		// tool must be called, the answer tool being one of them.
		if len(req.Tools) == 0 || req.ToolChoice == "none" {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: AnthropicAnswerTool}}
		} else {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
		}
	}
	if len(req.Tools) > 0 && !req.ParallelToolCalls {
		disableParallelToolUse(&p.ToolChoice)
	}
	markCacheBreakpoints(&p)
	// req.Temperature is not sent: the SDK's API version (2026-10-21) has
	// no sampling parameters, and the API rejects unknown fields.
	return p, nil
}

// disableParallelToolUse asks the model for one tool call per reply
// (disable_parallel_tool_use), as OpenAI's parallel_tool_calls false does,
// when the runtime runs the calls of a reply one after another
// (--max-parallel-tools 1): the model is told how its calls will run. The
// server's default choice, auto, is then sent explicitly, since the setting
// lives in tool_choice; "none" has no such setting and asks for no call.
func disableParallelToolUse(c *anthropic.ToolChoiceUnionParam) {
	switch {
	case c.OfAny != nil:
		c.OfAny.DisableParallelToolUse = anthropic.Bool(true)
	case c.OfTool != nil:
		c.OfTool.DisableParallelToolUse = anthropic.Bool(true)
	case c.OfNone != nil:
	case c.OfAuto != nil:
		c.OfAuto.DisableParallelToolUse = anthropic.Bool(true)
	default:
		c.OfAuto = &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(true)}
	}
}

// markCacheBreakpoints puts prompt-caching breakpoints (cache_control
// ephemeral, the five-minute cache) on a request, at most the API's four
// (docs/providers.md, "Prompt caching"):
//
//  1. the last tool: the tools, sorted by name, never change within a
//     run, so they are cached apart from the conversation;
//  2. the last system block: the agent's prompt and nexa's instructions;
//  3. the last block of the message the previous request ended with (the
//     user turn before the latest assistant reply): this request reads
//     the cache the previous one wrote there, however many blocks the
//     reply and its tool results added;
//  4. the last block of the last message: the conversation so far, which
//     the next request reads.
//
// Markers sit only in the request: the content before them is the same
// bytes in every request of the run, in this process or after a resume in
// another, because it is built from the stored messages alone.
func markCacheBreakpoints(p *anthropic.MessageNewParams) {
	ephemeral := anthropic.NewCacheControlEphemeralParam()
	if n := len(p.Tools); n > 0 {
		if cc := p.Tools[n-1].GetCacheControl(); cc != nil {
			*cc = ephemeral
		}
	}
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = ephemeral
	}
	markLast := func(content []anthropic.ContentBlockParamUnion) {
		if len(content) > 0 {
			if cc := content[len(content)-1].GetCacheControl(); cc != nil {
				*cc = ephemeral
			}
		}
	}
	n := len(p.Messages)
	if n == 0 {
		return
	}
	switch last := p.Messages[n-1]; {
	case last.OfUser != nil:
		markLast(last.OfUser.Content)
	case last.OfAssistant != nil:
		markLast(last.OfAssistant.Content)
	}
	for i := n - 2; i > 0; i-- {
		if p.Messages[i].OfAssistant != nil {
			if prev := p.Messages[i-1].OfUser; prev != nil {
				markLast(prev.Content)
			}
			break
		}
	}
}

// answerTool is the tool that carries a protocol answer for req, or nil
// when req asks for none, or when the protocol's schema cannot be a tool's
// input_schema (not an object) or an agent tool already has the name: the
// schema then goes in the system prompt instead.
func (a *Anthropic) answerTool(req Request) *anthropic.ToolParam {
	if req.Output == nil {
		return nil
	}
	for _, t := range req.Tools {
		if t.Name == AnthropicAnswerTool {
			return nil
		}
	}
	schema, err := anthropicSchema(req.Output.Schema)
	if err != nil {
		return nil
	}
	return &anthropic.ToolParam{
		Name:        AnthropicAnswerTool,
		Description: anthropic.String("Your final answer, as protocol " + req.Output.Name + ". Call it once, when you are done."),
		InputSchema: schema,
	}
}

// takeAnswer turns a call of the answer tool into the final answer: the
// call's input becomes the reply's text and the call is dropped. Beside
// calls of other tools the answer call is dropped alone (the tools run, and
// the model answers after their results).
func takeAnswer(reply *Reply) {
	var other []state.ToolCall
	answer := ""
	found := false
	for _, c := range reply.Message.ToolCalls {
		if c.Name == AnthropicAnswerTool {
			if !found {
				answer, found = c.Arguments, true
			}
			continue
		}
		other = append(other, c)
	}
	if !found {
		return
	}
	reply.Message.ToolCalls = other
	if len(other) == 0 {
		reply.Message.Content = answer
	}
}

// hasText reports whether s is worth a text block: the API rejects text
// blocks that are empty or only whitespace.
func hasText(s string) bool { return strings.TrimSpace(s) != "" }

// toolInput turns a call's raw arguments into the object tool_use.input must
// be: compact JSON when they are an object, {} when they are empty. ok is
// false when they are something else (malformed or not an object).
func toolInput(args string) (input json.RawMessage, ok bool) {
	s := bytes.TrimSpace([]byte(args))
	if len(s) == 0 {
		return json.RawMessage(`{}`), true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(s, &obj) != nil || obj == nil {
		return json.RawMessage(`{}`), false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, s) != nil {
		return json.RawMessage(`{}`), false
	}
	return json.RawMessage(buf.Bytes()), true
}

// anthropicSchema converts a tool's JSON Schema to input_schema, sent as the
// schema's own bytes (compacted) so that every keyword, number and key order
// survives and the same tool always encodes the same way; "type": "object"
// is added when the schema leaves it out. An empty schema means a tool
// without arguments.
func anthropicSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		s = []byte(`{"type":"object","properties":{}}`)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s, &m); err != nil {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	if m == nil {
		return anthropic.ToolInputSchemaParam{}, errors.New("parameters are not a JSON Schema object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, s); err != nil {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	out := buf.Bytes()
	if t, ok := m["type"]; !ok {
		rest := bytes.TrimSpace(out[1:])
		if len(m) > 0 {
			out = append([]byte(`{"type":"object",`), rest...)
		} else {
			out = []byte(`{"type":"object"}`)
		}
	} else {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != "object" {
			return anthropic.ToolInputSchemaParam{}, fmt.Errorf("parameters must be an object schema, not type %s", t)
		}
	}
	return param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(out)), nil
}

// anthropicWireMessage is the part of a Messages API response the runtime
// uses, read with encoding/json so that an absent count is told from zero
// and odd output fails cleanly.
type anthropicWireMessage struct {
	ID           string                     `json:"id"`
	Type         string                     `json:"type"`
	Role         string                     `json:"role"`
	Model        string                     `json:"model"`
	Content      []json.RawMessage          `json:"content"`
	StopReason   *string                    `json:"stop_reason"`
	StopSequence *string                    `json:"stop_sequence"`
	Usage        map[string]json.RawMessage `json:"usage"`
	Error        *anthropicWireError        `json:"error"`
}

// anthropicWireBlock is one content block (or the start of one in a stream).
type anthropicWireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

// anthropicWireError is the error object of an error body or stream event.
type anthropicWireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// replyFromBody converts a whole (non-streamed) response body.
func (a *Anthropic) replyFromBody(body []byte, contentType string) (Reply, error) {
	var m anthropicWireMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return Reply{}, &Error{Kind: KindMalformedReply, Message: fmt.Sprintf(
			"the response from %s is not an Anthropic message (Content-Type %q); is --base-url the API root without /v1 (e.g. %s)? %s",
			a.baseURL, contentType, DefaultAnthropicBaseURL, a.redact(truncate(string(body), 300)))}
	}
	if m.Type == "error" || (m.Error != nil && m.Type != "message") {
		return Reply{}, a.eventError(m.Error, "the server answered with an error")
	}
	if m.Type != "message" && m.Content == nil {
		return Reply{}, &Error{Kind: KindMalformedReply, Message: "the response is not an Anthropic message: " + a.redact(truncate(string(body), 300))}
	}
	msg := state.Message{Role: state.RoleAssistant}
	var text strings.Builder
	for _, raw := range m.Content {
		var b anthropicWireBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return Reply{}, &Error{Kind: KindMalformedReply, Message: fmt.Sprintf("a content block of the response is malformed (%v): %s", err, a.redact(truncate(string(raw), 300)))}
		}
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, state.ToolCall{ID: b.ID, Name: b.Name, Arguments: compactArguments(string(b.Input))})
		}
	}
	msg.Content = text.String()
	fillCallIDs(msg.ToolCalls, body)
	usage, err := anthropicUsage(m.Usage)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{Message: msg, Raw: json.RawMessage(body), Usage: usage}
	if m.StopReason != nil {
		reply.FinishReason = *m.StopReason
	}
	return reply, nil
}

// compactArguments renders a tool_use input as the compact JSON text the
// runtime stores; an absent input is {}, and text that is not JSON (only a
// broken stream could produce it) is kept as it is for the runtime to refuse.
func compactArguments(input string) string {
	s := bytes.TrimSpace([]byte(input))
	if len(s) == 0 || bytes.Equal(s, []byte("null")) {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, s) != nil {
		return input
	}
	return buf.String()
}

// anthropicUsage converts the wire usage. Tokens read from or written to the
// prompt cache are input tokens too (the API counts them apart from
// input_tokens), so budgets see everything the prompt cost; they are also
// kept apart (CachedInputTokens, CacheCreationInputTokens) for their
// prices. A count that is
// negative or above MaxReplyTokens is an error: left out or clamped, it
// would let a run spend past its budget.
func anthropicUsage(u map[string]json.RawMessage) (state.Usage, error) {
	var bad error
	n := func(k string) int {
		var v float64
		raw, ok := u[k]
		if !ok || json.Unmarshal(raw, &v) != nil {
			return 0
		}
		if v < 0 || v > MaxReplyTokens {
			if bad == nil {
				bad = badReply("the reply reports %s %s, which is impossible (a count must be between 0 and %d)", raw, k, MaxReplyTokens)
			}
			return 0
		}
		return int(v)
	}
	out := state.Usage{
		CachedInputTokens:        n("cache_read_input_tokens"),
		CacheCreationInputTokens: n("cache_creation_input_tokens"),
		OutputTokens:             n("output_tokens"),
		ProviderRequests:         1,
	}
	out.InputTokens = n("input_tokens") + out.CachedInputTokens + out.CacheCreationInputTokens
	out.TotalTokens = out.InputTokens + out.OutputTokens
	return out, bad
}

// anthropicStreamEvent is one server-sent event of a Messages stream; which
// fields are set depends on its type.
type anthropicStreamEvent struct {
	Type         string                     `json:"type"`
	Index        *int64                     `json:"index"`
	Message      *anthropicWireMessage      `json:"message"`
	ContentBlock json.RawMessage            `json:"content_block"`
	Delta        *anthropicStreamDelta      `json:"delta"`
	Usage        map[string]json.RawMessage `json:"usage"`
	Error        *anthropicWireError        `json:"error"`
}

// anthropicStreamDelta is the delta of content_block_delta (text,
// partial_json, thinking, signature) or of message_delta (stop_reason).
type anthropicStreamDelta struct {
	Type         string  `json:"type"`
	Text         string  `json:"text"`
	PartialJSON  string  `json:"partial_json"`
	Thinking     string  `json:"thinking"`
	Signature    string  `json:"signature"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// stream reads the SSE path: it assembles the events into one reply, which
// is returned only once the server has sent message_stop.
func (a *Anthropic) stream(ctx context.Context, res *http.Response, progress func(Event)) (Reply, error) {
	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return Reply{}, errNoBody()
	}
	defer dec.Close()
	var acc anthropicAcc
	for dec.Next() {
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		var e anthropicStreamEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return Reply{}, &Error{Kind: KindMalformedReply, Message: fmt.Sprintf("a stream event is not a Messages API event (%v): %s", err, a.redact(truncate(string(data), 300)))}
		}
		// The type inside the data is the protocol's; the SSE event
		// name is the fallback for a server that leaves it out.
		typ := e.Type
		if typ == "" {
			typ = ev.Type
		}
		if typ == "error" {
			return Reply{}, a.eventError(e.Error, "the server reported an error in the stream")
		}
		text, err := acc.add(typ, &e)
		if err != nil {
			return Reply{}, &Error{Kind: KindMalformedReply, Message: a.redact(err.Error())}
		}
		if acc.size > a.limits.content {
			return Reply{}, contentTooLarge(a.limits.content)
		}
		if text != "" && progress != nil {
			progress(Event{TextDelta: text})
		}
		if acc.stopped {
			break
		}
	}
	// The loop stops at message_stop without reading further, so a
	// decoder error always means the stream broke before it.
	if err := a.streamEnd(ctx, dec.Err(), acc.stopped, "the stream ended", "message_stop"); err != nil {
		return Reply{}, err
	}
	if !acc.started {
		return Reply{}, &Error{Kind: KindMalformedReply, Message: "the stream ended without a message_start event: it is not a Messages API stream"}
	}
	return acc.reply()
}

// eventError classifies an error object sent with HTTP 200: an "error"
// stream event, or an error body some proxies send without an error status.
func (a *Anthropic) eventError(e *anthropicWireError, what string) *Error {
	var typ, msg string
	if e != nil {
		typ, msg = e.Type, e.Message
	}
	kind, transient := KindServer, true
	switch typ {
	case "rate_limit_error":
		kind = KindRateLimited
	case "overloaded_error", "api_error", "timeout_error", "":
		// Server-side trouble: worth another try.
	case "authentication_error", "permission_error":
		kind, transient = KindAuth, false
	case "not_found_error":
		kind, transient = KindNotFound, false
	case "invalid_request_error", "request_too_large", "billing_error":
		kind, transient = KindInvalidRequest, false
	}
	text := what
	if typ != "" {
		text += " (" + typ + ")"
	}
	if msg != "" {
		text += ": " + truncate(msg, 500)
	}
	return &Error{Kind: kind, Transient: transient, Message: a.redact(text)}
}

// anthropicAcc assembles the events of one streamed message.
type anthropicAcc struct {
	id, model    string
	started      bool
	blocks       map[int64]*anthropicAccBlock
	stopReason   *string
	stopSequence *string
	usage        map[string]json.RawMessage
	stopped      bool
	// size counts the bytes kept from the events (block starts, text,
	// thinking, signatures, tool input, usage), for the content limit.
	size int64
}

// anthropicAccBlock is one content block being assembled from its deltas.
type anthropicAccBlock struct {
	index     int64
	typ       string
	start     json.RawMessage // the content_block of content_block_start
	id, name  string
	text      strings.Builder // text, or thinking
	signature strings.Builder
	input     strings.Builder // tool_use input_json_delta pieces
	inputSeen bool
	// startInput is the input of content_block_start, used when no
	// delta follows.
	startInput json.RawMessage
}

// block finds or starts the block at index; a delta for an index that was
// never started starts a block of the delta's kind.
func (a *anthropicAcc) block(index int64, typ string) *anthropicAccBlock {
	if a.blocks == nil {
		a.blocks = map[int64]*anthropicAccBlock{}
	}
	b := a.blocks[index]
	if b == nil {
		b = &anthropicAccBlock{index: index, typ: typ}
		a.blocks[index] = b
	}
	return b
}

// mergeUsage overlays the counts of u on those seen so far: message_delta
// carries cumulative counts, which replace message_start's.
func (a *anthropicAcc) mergeUsage(u map[string]json.RawMessage) {
	if a.usage == nil {
		a.usage = map[string]json.RawMessage{}
	}
	for k, v := range u {
		if len(v) > 0 && string(v) != "null" {
			a.usage[k] = v
			a.size += int64(len(k) + len(v))
		}
	}
}

// add folds one event into the message and returns its text delta.
func (a *anthropicAcc) add(typ string, e *anthropicStreamEvent) (string, error) {
	index := int64(0)
	if e.Index != nil {
		index = *e.Index
	}
	switch typ {
	case "message_start":
		a.started = true
		if m := e.Message; m != nil {
			a.id, a.model = m.ID, m.Model
			a.mergeUsage(m.Usage)
			if m.StopReason != nil {
				a.stopReason = m.StopReason
			}
		}
	case "content_block_start":
		var cb anthropicWireBlock
		if len(e.ContentBlock) > 0 {
			if err := json.Unmarshal(e.ContentBlock, &cb); err != nil {
				return "", fmt.Errorf("content_block_start %d: the block is malformed (%v): %s", index, err, truncate(string(e.ContentBlock), 300))
			}
		}
		b := a.block(index, cb.Type)
		if b.typ == "" {
			b.typ = cb.Type
		}
		b.start = e.ContentBlock
		b.id, b.name = cb.ID, cb.Name
		b.startInput = cb.Input
		b.signature.WriteString(cb.Signature)
		a.size += int64(len(e.ContentBlock) + len(cb.Text) + len(cb.Thinking) + len(cb.Signature))
		switch cb.Type {
		case "text":
			b.text.WriteString(cb.Text)
			return cb.Text, nil
		case "thinking":
			b.text.WriteString(cb.Thinking)
		}
	case "content_block_delta":
		d := e.Delta
		if d == nil {
			return "", nil
		}
		a.size += int64(len(d.Text) + len(d.PartialJSON) + len(d.Thinking) + len(d.Signature))
		switch d.Type {
		case "text_delta":
			a.block(index, "text").text.WriteString(d.Text)
			return d.Text, nil
		case "input_json_delta":
			b := a.block(index, "tool_use")
			b.input.WriteString(d.PartialJSON)
			b.inputSeen = true
		case "thinking_delta":
			a.block(index, "thinking").text.WriteString(d.Thinking)
		case "signature_delta":
			a.block(index, "thinking").signature.WriteString(d.Signature)
		}
	case "message_delta":
		if d := e.Delta; d != nil {
			if d.StopReason != nil {
				a.stopReason = d.StopReason
			}
			if d.StopSequence != nil {
				a.stopSequence = d.StopSequence
			}
		}
		a.mergeUsage(e.Usage)
	case "message_stop":
		a.stopped = true
	}
	// content_block_stop, ping and event types added later carry nothing
	// the reply needs.
	return "", nil
}

// reply builds the complete reply and a raw response shaped like a
// non-streamed message, so that the audit trail reads the same whichever
// way the reply arrived.
func (a *anthropicAcc) reply() (Reply, error) {
	blocks := make([]*anthropicAccBlock, 0, len(a.blocks))
	for _, b := range a.blocks {
		blocks = append(blocks, b)
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].index < blocks[j].index })

	msg := state.Message{Role: state.RoleAssistant}
	var text strings.Builder
	for _, b := range blocks {
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, state.ToolCall{ID: b.id, Name: b.name, Arguments: b.arguments()})
		}
	}
	msg.Content = text.String()

	type rawMessage struct {
		ID           string            `json:"id"`
		Type         string            `json:"type"`
		Role         string            `json:"role"`
		Model        string            `json:"model"`
		Content      []json.RawMessage `json:"content"`
		StopReason   *string           `json:"stop_reason"`
		StopSequence *string           `json:"stop_sequence"`
		Usage        json.RawMessage   `json:"usage,omitempty"`
	}
	encode := func() (json.RawMessage, error) {
		rm := rawMessage{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []json.RawMessage{},
			StopReason: a.stopReason, StopSequence: a.stopSequence}
		calls := 0
		for _, b := range blocks {
			var raw []byte
			var err error
			switch b.typ {
			case "text":
				raw, err = json.Marshal(struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}{"text", b.text.String()})
			case "tool_use":
				args := msg.ToolCalls[calls].Arguments
				call := struct {
					Type  string          `json:"type"`
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				}{"tool_use", msg.ToolCalls[calls].ID, b.name, json.RawMessage(args)}
				if !json.Valid(call.Input) {
					// Kept as received, as a string, so the raw
					// reply stays valid JSON.
					call.Input, _ = json.Marshal(args)
				}
				calls++
				raw, err = json.Marshal(call)
			case "thinking":
				raw, err = json.Marshal(struct {
					Type      string `json:"type"`
					Thinking  string `json:"thinking"`
					Signature string `json:"signature"`
				}{"thinking", b.text.String(), b.signature.String()})
			default:
				// Block kinds the runtime does not use are kept as
				// the server started them.
				if s := bytes.TrimSpace(b.start); b.typ != "" && len(s) > 0 && s[0] == '{' && json.Valid(s) {
					raw = s
				}
			}
			if err != nil {
				return nil, err
			}
			if raw != nil {
				rm.Content = append(rm.Content, raw)
			}
		}
		if len(a.usage) > 0 {
			u, err := json.Marshal(a.usage)
			if err != nil {
				return nil, err
			}
			rm.Usage = u
		}
		return json.Marshal(rm)
	}
	raw, err := encodeFillingIDs(msg.ToolCalls, encode)
	if err != nil {
		return Reply{}, fmt.Errorf("anthropic stream: encode assembled reply: %w", err)
	}
	usage, err := anthropicUsage(a.usage)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{Message: msg, Raw: raw, Usage: usage}
	if a.stopReason != nil {
		reply.FinishReason = *a.stopReason
	}
	return reply, nil
}

// arguments is the tool_use input as compact JSON text: the concatenated
// input_json_delta pieces, or the start block's input when none came.
func (b *anthropicAccBlock) arguments() string {
	if b.inputSeen && strings.TrimSpace(b.input.String()) != "" {
		return compactArguments(b.input.String())
	}
	return compactArguments(string(b.startInput))
}

// anthropicStatus finds the SDK's error for an HTTP error status, with the
// status and the response it carries.
func anthropicStatus(err error) (int, *http.Response, bool) {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return 0, nil, false
	}
	return apiErr.StatusCode, apiErr.Response, true
}
