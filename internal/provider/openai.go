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
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/nexa-run/nexa/internal/state"
)

// DefaultOpenAIBaseURL is where an OpenAI provider sends requests when no
// base URL is configured.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIConfig is everything an OpenAI-compatible endpoint needs. The CLI
// resolves it from flags, environment and secrets (docs/reference/runtime.md#provider-resolution); this
// package reads no environment variable itself, so a key meant for one
// server can never leak to another.
type OpenAIConfig struct {
	// BaseURL of the API, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1; empty means DefaultOpenAIBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization
	// header (local servers).
	APIKey string
	// Model is the model name sent when a Request names none.
	Model string
	// HTTPClient replaces the default client (tests, proxies); nil uses a
	// client whose only timeout is on response headers, since streams
	// may legitimately run for minutes.
	HTTPClient *http.Client
	// Kind is the identity kind reported to the run; empty means "openai".
	Kind string
}

// OpenAI talks to any OpenAI-compatible Chat Completions endpoint (OpenAI,
// DeepSeek, vLLM, Ollama, llama.cpp, LM Studio) through the official
// openai-go client, with the client's own retries disabled: WithRetry and
// the runtime own retries so they can respect the run's deadline.
type OpenAI struct {
	cfg OpenAIConfig
	// httpAPI holds the base URL and the key redaction and error wording
	// shared with Anthropic (http.go).
	httpAPI
	svc openai.ChatCompletionService
	// jsonObjectOnly is set once the server has refused a json_schema
	// response_format: protocol answers are then asked for with
	// json_object and the schema in a system message.
	jsonObjectOnly atomic.Bool
}

// NewOpenAI checks cfg and builds a provider. It fails on a missing model or
// a base URL that is not an absolute http(s) URL, so a misconfiguration is
// reported before a run is created.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai provider: no model configured; pass --model or set NEXA_MODEL")
	}
	base, err := checkBaseURL("openai", cfg.BaseURL, DefaultOpenAIBaseURL, "http://localhost:11434/v1", cfg.APIKey)
	if err != nil {
		return nil, err
	}
	if cfg.Kind == "" {
		cfg.Kind = "openai"
	}
	lim := defaultReplyLimits()
	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(httpClient(cfg.HTTPClient, lim)),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// NewChatCompletionService, unlike openai.NewClient, reads no
	// OPENAI_* environment variable: configuration comes from cfg only.
	api := httpAPI{
		name: "openai", baseURL: base, apiKey: cfg.APIKey,
		keyHint:   "NEXA_API_KEY or the provider's key variable",
		notFound:  base + "/chat/completions was not found; check --base-url (an OpenAI-compatible base URL usually ends in /v1)",
		limits:    lim,
		sdkStatus: openaiStatus,
		notAReply: func(contentType string) string {
			return fmt.Sprintf("the response from %s is not a chat completion (Content-Type %q); is --base-url an OpenAI-compatible API (it usually ends in /v1)?", base, contentType)
		},
	}
	return &OpenAI{cfg: cfg, httpAPI: api, svc: openai.NewChatCompletionService(opts...)}, nil
}

// Identity names the endpoint (kind, base URL, model) and never the key.
func (o *OpenAI) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: o.cfg.Kind, BaseURL: o.baseURL, Model: o.cfg.Model}
}

// Complete sends one Chat Completions request, streamed when req.Stream is
// set, and returns the complete reply or an *Error classified for retries.
// A request for a protocol's answer that the server rejects for its
// response_format (a server that knows json_object but not json_schema) is
// sent again at once in the json_object form, which this provider then
// keeps using (docs/providers.md, "Structured answers").
func (o *OpenAI) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	reply, err := o.send(ctx, req, progress)
	if req.Output != nil && !o.jsonObjectOnly.Load() && rejectsResponseFormat(err) {
		o.jsonObjectOnly.Store(true)
		reply, err = o.send(ctx, req, progress)
	}
	return reply, err
}

// send makes one request and checks the reply by the rules of checkReply.
func (o *OpenAI) send(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	params, err := o.params(req)
	if err != nil {
		return Reply{}, &Error{Kind: KindInvalidRequest, Message: o.redact(err.Error())}
	}
	var reply Reply
	if req.Stream {
		reply, err = o.stream(ctx, params, progress)
	} else {
		reply, err = o.complete(ctx, params)
	}
	if err != nil {
		return Reply{}, err
	}
	if err := checkReply(reply, "tool_calls"); err != nil {
		return Reply{}, err
	}
	reply.Raw = validUTF8JSON(redactJSON(reply.Raw, o.cfg.APIKey))
	return reply, nil
}

// rejectsResponseFormat reports whether err is a server refusing the
// request because of its response_format (HTTP 400 naming it or
// json_schema), the sign of a server without structured outputs.
func rejectsResponseFormat(err error) bool {
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindInvalidRequest || pe.Status != http.StatusBadRequest {
		return false
	}
	m := strings.ToLower(pe.Message)
	return strings.Contains(m, "response_format") || strings.Contains(m, "json_schema")
}

// params converts a provider-neutral request to the Chat Completions wire
// format.
func (o *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = o.cfg.Model
	}
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	for i, m := range req.Messages {
		switch m.Role {
		case state.RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case state.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case state.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			// An assistant message that only calls tools carries no
			// content; one without calls always does, even if empty.
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: c.Arguments,
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case state.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("message %d: a tool message has no tool_call_id", i+1)
			}
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return p, fmt.Errorf("message %d: unknown role %q", i+1, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := toolSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	switch req.ToolChoice {
	case "":
		// The server's default: auto when tools are offered.
	case "auto", "required", "none":
		if len(req.Tools) > 0 {
			p.ToolChoice.OfAuto = openai.String(req.ToolChoice)
		}
	default:
		return p, fmt.Errorf("tool choice %q is not auto, required or none", req.ToolChoice)
	}
	if len(req.Tools) > 0 {
		// Only with tools: servers refuse the field without them.
		p.ParallelToolCalls = openai.Bool(req.ParallelToolCalls)
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	switch {
	case req.Output != nil && !o.jsonObjectOnly.Load():
		schema, err := toolSchema(req.Output.Schema)
		if err != nil {
			return p, fmt.Errorf("protocol %s: %w", req.Output.Name, err)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   schemaName(req.Output.Name),
				Schema: schema,
				Strict: openai.Bool(strictSchema(req.Output.Schema)),
			},
		}
	case req.Output != nil || req.JSONOutput:
		// json_object mode: OpenAI requires the word JSON in a message,
		// and the model only knows the fields if it is told them.
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		p.Messages = insertSystem(p.Messages, openai.SystemMessage(jsonInstruction(req.Output)))
	}
	if req.Stream {
		p.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	if req.CacheKey != "" && o.baseURL == DefaultOpenAIBaseURL {
		// OpenAI routes requests with the same key to the same cache,
		// so a run's requests hit the prefix its earlier ones wrote.
		// Other OpenAI-compatible servers may reject a field they do
		// not know, so only OpenAI's own API is sent it.
		p.PromptCacheKey = openai.String(req.CacheKey)
	}
	return p, nil
}

// insertSystem puts m after the leading system messages of msgs (first
// when there are none), so instructions stay ahead of the conversation.
func insertSystem(msgs []openai.ChatCompletionMessageParamUnion, m openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	i := 0
	for i < len(msgs) && msgs[i].OfSystem != nil {
		i++
	}
	return append(msgs[:i:i], append([]openai.ChatCompletionMessageParamUnion{m}, msgs[i:]...)...)
}

// toolSchema decodes a tool's JSON Schema, keeping numbers exact; an empty
// schema means a tool without arguments.
func toolSchema(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	// Values stay json.RawMessage so the schema is sent byte for byte
	// (the SDK's encoder would turn a json.Number into a string).
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	if m == nil {
		return nil, errors.New("parameters are not a JSON Schema object")
	}
	out := make(shared.FunctionParameters, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// complete is the non-streaming path.
func (o *OpenAI) complete(ctx context.Context, params openai.ChatCompletionNewParams) (Reply, error) {
	var res *http.Response
	cc, err := o.svc.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return Reply{}, o.classify(ctx, err, res, o.cfg.Model)
	}
	return o.replyFrom(cc)
}

// replyFrom converts a whole (non-streamed) completion.
func (o *OpenAI) replyFrom(cc *openai.ChatCompletion) (Reply, error) {
	raw := json.RawMessage(cc.RawJSON())
	if len(cc.Choices) == 0 {
		return Reply{}, &Error{Kind: KindMalformedReply, Message: "the response has no choices: " + o.redact(truncate(string(raw), 300))}
	}
	ch := cc.Choices[0]
	if !ch.JSON.Message.Valid() {
		return Reply{}, badReply("the reply's message is %s, not an object: %s", describeRaw(ch.JSON.Message.Raw()), o.redact(truncate(string(raw), 300)))
	}
	if tc := ch.Message.JSON.ToolCalls; !tc.Valid() && tc.Raw() != "" && tc.Raw() != "null" {
		return Reply{}, badReply("the reply's tool_calls is not a list: %s", o.redact(truncate(tc.Raw(), 300)))
	}
	msg := state.Message{Role: state.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, state.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	fillCallIDs(msg.ToolCalls, raw)
	if len(raw) == 0 || !json.Valid(raw) {
		raw, _ = json.Marshal(cc)
	}
	return Reply{
		Message:      msg,
		Raw:          raw,
		Usage:        usageFrom(cc.Usage),
		FinishReason: ch.FinishReason,
	}, nil
}

// usageFrom converts the wire usage; total is derived when a server omits it.
// Cached prompt tokens (prompt_tokens_details.cached_tokens) are part of
// prompt_tokens, as they are of InputTokens.
func usageFrom(u openai.CompletionUsage) state.Usage {
	out := state.Usage{
		InputTokens:       int(u.PromptTokens),
		CachedInputTokens: int(u.PromptTokensDetails.CachedTokens),
		OutputTokens:      int(u.CompletionTokens),
		TotalTokens:       int(u.TotalTokens),
		ProviderRequests:  1,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

// stream is the SSE path: it assembles the deltas into one reply, which is
// returned only once the model has said it finished.
func (o *OpenAI) stream(ctx context.Context, params openai.ChatCompletionNewParams, progress func(Event)) (Reply, error) {
	var res *http.Response
	_, err := o.svc.New(ctx, params,
		option.WithJSONSet("stream", true),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseBodyInto(&res))
	if err != nil {
		return Reply{}, o.classify(ctx, err, res, o.cfg.Model)
	}
	if res == nil || res.Body == nil {
		return Reply{}, errNoBody()
	}
	defer res.Body.Close()

	// A server that ignores "stream": true answers with a plain JSON
	// completion; take it as such.
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return Reply{}, o.classify(ctx, fmt.Errorf("read response: %w", err), nil, o.cfg.Model)
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(body, &cc); err != nil {
			return Reply{}, &Error{Kind: KindMalformedReply, Message: "the response is not a chat completion: " + o.redact(truncate(string(body), 300))}
		}
		return o.replyFrom(&cc)
	}

	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return Reply{}, errNoBody()
	}
	defer dec.Close()
	var acc streamAcc
	for dec.Next() {
		data := bytes.TrimSpace(dec.Event().Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			acc.done = true
			break
		}
		if perr := o.streamError(data); perr != nil {
			return Reply{}, perr
		}
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return Reply{}, &Error{Kind: KindMalformedReply, Message: fmt.Sprintf("a stream event is not a chat completion chunk (%v): %s", err, o.redact(truncate(string(data), 300)))}
		}
		if perr := checkChunk(&chunk); perr != nil {
			return Reply{}, &Error{Kind: perr.Kind, Transient: perr.Transient, Message: o.redact(perr.Message)}
		}
		text := acc.add(&chunk)
		if acc.size > o.limits.content {
			return Reply{}, contentTooLarge(o.limits.content)
		}
		if text != "" && progress != nil {
			progress(Event{TextDelta: text})
		}
	}
	ended := "the stream ended"
	if acc.done {
		ended = "the stream sent [DONE]"
	}
	if err := o.streamEnd(ctx, dec.Err(), acc.finish != "", ended, "finish_reason"); err != nil {
		return Reply{}, err
	}
	return acc.reply()
}

// streamError recognises an error event inside a stream ({"error": ...}),
// which servers send when they fail after the headers went out.
func (o *OpenAI) streamError(data []byte) *Error {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || len(probe.Error) == 0 || string(probe.Error) == "null" {
		return nil
	}
	msg := errorText(data)
	var body struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &body)
	kind, transient := KindServer, true
	code := fmt.Sprint(body.Error.Code)
	switch {
	case strings.Contains(code, "rate_limit") || strings.Contains(body.Error.Type, "rate_limit"):
		kind = KindRateLimited
	case strings.Contains(body.Error.Type, "invalid_request"):
		kind, transient = KindInvalidRequest, false
	}
	return &Error{Kind: kind, Transient: transient, Message: "the server reported an error in the stream: " + o.redact(msg)}
}

// checkChunk refuses a stream chunk whose delta has tool_calls that are not
// a list: the calls would be lost, and the reply taken for an answer.
func checkChunk(c *openai.ChatCompletionChunk) *Error {
	for _, ch := range c.Choices {
		if tc := ch.Delta.JSON.ToolCalls; !tc.Valid() && tc.Raw() != "" && tc.Raw() != "null" {
			return badReply("a stream chunk's tool_calls is not a list: %s", truncate(tc.Raw(), 300))
		}
	}
	return nil
}

// describeRaw names a JSON value that is missing or of the wrong kind, for
// error messages.
func describeRaw(raw string) string {
	switch raw {
	case "":
		return "missing"
	case "null":
		return "null"
	}
	return "of the wrong kind"
}

// streamAcc assembles the chunks of one streamed completion.
type streamAcc struct {
	id, model, fingerprint string
	created                int64
	content, refusal       strings.Builder
	calls                  []*accCall
	finish                 string
	usage                  openai.CompletionUsage
	usageRaw               json.RawMessage
	done                   bool
	// size counts the bytes kept from the deltas (text, refusal, call
	// ids, names and arguments), for the content limit.
	size int64
}

// accCall is one tool call being assembled from its deltas.
type accCall struct {
	index     int64
	id, name  string
	arguments strings.Builder
}

// add folds a chunk into the reply and returns its text delta. Only choice 0
// is kept: the runtime never asks for more than one.
func (a *streamAcc) add(c *openai.ChatCompletionChunk) string {
	if a.id == "" {
		a.id = c.ID
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Created != 0 {
		a.created = c.Created
	}
	//lint:ignore SA1019 deprecated by OpenAI, still sent by servers; kept so the saved reply is what the server said
	if fp := c.SystemFingerprint; fp != "" {
		a.fingerprint = fp
	}
	if c.JSON.Usage.Valid() {
		a.usage = c.Usage
		a.usageRaw = json.RawMessage(c.Usage.RawJSON())
	}
	var text string
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		text += d.Content
		a.content.WriteString(d.Content)
		a.refusal.WriteString(d.Refusal)
		a.size += int64(len(d.Content) + len(d.Refusal))
		for _, tc := range d.ToolCalls {
			a.call(tc).arguments.WriteString(tc.Function.Arguments)
			a.size += int64(len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments))
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return text
}

// call finds or starts the call a tool-call delta belongs to. The id and
// name arrive with the first delta of an index; later deltas carry argument
// pieces. A server that omits the index continues the last call unless it
// names a new id.
func (a *streamAcc) call(tc openai.ChatCompletionChunkChoiceDeltaToolCall) *accCall {
	var c *accCall
	if tc.JSON.Index.Valid() {
		for _, x := range a.calls {
			if x.index == tc.Index {
				c = x
				break
			}
		}
	} else if n := len(a.calls); n > 0 && (tc.ID == "" || tc.ID == a.calls[n-1].id) {
		c = a.calls[n-1]
	}
	if c == nil {
		idx := tc.Index
		if !tc.JSON.Index.Valid() {
			idx = int64(len(a.calls))
		}
		c = &accCall{index: idx}
		a.calls = append(a.calls, c)
	}
	if c.id == "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Function.Name
	}
	return c
}

// reply builds the complete reply and a raw response shaped like a
// non-streamed chat completion, so that the audit trail reads the same
// whichever way the reply arrived.
func (a *streamAcc) reply() (Reply, error) {
	calls := append([]*accCall(nil), a.calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	msg := state.Message{Role: state.RoleAssistant, Content: a.content.String()}
	if msg.Content == "" && a.refusal.Len() > 0 {
		msg.Content = a.refusal.String()
	}
	type rawFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type rawCall struct {
		ID       string      `json:"id"`
		Type     string      `json:"type"`
		Function rawFunction `json:"function"`
	}
	type rawMessage struct {
		Role      string    `json:"role"`
		Content   *string   `json:"content"`
		Refusal   *string   `json:"refusal"`
		ToolCalls []rawCall `json:"tool_calls,omitempty"`
	}
	type rawChoice struct {
		Index        int        `json:"index"`
		Message      rawMessage `json:"message"`
		FinishReason string     `json:"finish_reason"`
	}
	type rawCompletion struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint string          `json:"system_fingerprint,omitempty"`
		Choices           []rawChoice     `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
	}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, state.ToolCall{ID: c.id, Name: c.name, Arguments: c.arguments.String()})
	}
	rm := rawMessage{Role: "assistant"}
	if s := a.content.String(); s != "" || len(calls) == 0 {
		rm.Content = &s
	}
	if s := a.refusal.String(); s != "" {
		rm.Refusal = &s
	}
	rc := rawCompletion{
		ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		SystemFingerprint: a.fingerprint,
		Choices:           []rawChoice{{Message: rm, FinishReason: a.finish}},
	}
	if len(a.usageRaw) > 0 && json.Valid(a.usageRaw) {
		rc.Usage = a.usageRaw
	}
	fillRaw := func() (json.RawMessage, error) {
		rc.Choices[0].Message.ToolCalls = nil
		for _, c := range msg.ToolCalls {
			rc.Choices[0].Message.ToolCalls = append(rc.Choices[0].Message.ToolCalls,
				rawCall{ID: c.ID, Type: "function", Function: rawFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		return json.Marshal(rc)
	}
	raw, err := encodeFillingIDs(msg.ToolCalls, fillRaw)
	if err != nil {
		return Reply{}, fmt.Errorf("openai stream: encode assembled reply: %w", err)
	}
	return Reply{Message: msg, Raw: raw, Usage: usageFrom(a.usage), FinishReason: a.finish}, nil
}

// openaiStatus finds the SDK's error for an HTTP error status, with the
// status and the response it carries.
func openaiStatus(err error) (int, *http.Response, bool) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return 0, nil, false
	}
	return apiErr.StatusCode, apiErr.Response, true
}
