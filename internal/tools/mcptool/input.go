package mcptool

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
)

// Input requests (multi round-trip requests of the 2026-07-28 revision):
// a server may answer tools/call with resultType "input_required", a map
// of inputRequests and an opaque requestState, and expects the client to
// send the same request again with inputResponses and that state. The
// SDK's automatic retries are off (Connect), so such an answer reaches
// Call, which hands it to the runtime as tool.Outcome.Input: the runtime
// journals it and waits for a person, then calls again with the answer
// (CallOptions.Input). nexa offers elicitation only (forms and URLs),
// and only to servers of that revision, which ask in the answer rather
// than with a request of their own that nexa would have to answer at
// once.

// inputRevision is the first MCP revision whose servers ask for input in
// the answer to tools/call.
const inputRevision = "2026-07-28"

// loadSheddingRetries is how many times a call is sent again at once when
// the server answers input_required without any request (it asks the
// client to come back, a server shedding load), before it is a failed
// call.
const loadSheddingRetries = 3

// offersInput reports whether nexa declares elicitation to the server on
// its calls: only at the revision where an input request comes back in
// the answer and can wait for a person.
func (s *Server) offersInput() bool { return s.ProtocolVersion() >= inputRevision }

// callCapabilities are the per-request capabilities of a tools/call.
func (s *Server) callCapabilities() map[string]any {
	caps := taskMeta()
	if s.offersInput() {
		caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	}
	return caps
}

// inputResponses decodes a journaled round's answers for the retry.
func inputResponses(in *state.InputRound) (mcp.InputResponseMap, error) {
	if in == nil || len(in.Responses) == 0 {
		return nil, fmt.Errorf("the input round has no answer")
	}
	var m mcp.InputResponseMap
	if err := json.Unmarshal(in.Responses, &m); err != nil {
		return nil, fmt.Errorf("the journaled answer cannot be read: %w", err)
	}
	return m, nil
}

// inputOutcome turns an input_required answer into the outcome that asks
// the runtime to wait for a person: each request must be an elicitation
// nexa can show (a form with a schema it can check answers against, or an
// http(s) URL); anything else is a failed call the model sees.
func (s *Server) inputOutcome(name string, res *mcp.CallToolResult) tool.Outcome {
	fail := func(why string) tool.Outcome {
		return tool.Outcome{Output: fmt.Sprintf("error: MCP tool %s asked for input before it would run: %s; the call did not complete", name, why)}
	}
	if !s.offersInput() {
		return fail("nexa offers input only to servers of MCP revision " + inputRevision + " or later")
	}
	keys := make([]string, 0, len(res.InputRequests))
	for k := range res.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	round := &state.InputRound{Server: s.spec.Raw, RequestState: res.RequestState}
	for _, k := range keys {
		p, ok := res.InputRequests[k].(*mcp.ElicitParams)
		if !ok || p == nil {
			return fail(fmt.Sprintf("request %q is not an elicitation (%T), which nexa does not offer", k, res.InputRequests[k]))
		}
		r := state.InputRequest{Key: k, Mode: p.Mode, Message: p.Message}
		if r.Mode == "" {
			r.Mode = state.InputForm
			if p.URL != "" {
				r.Mode = state.InputURL
			}
		}
		switch r.Mode {
		case state.InputForm:
			schema, err := formSchema(p.RequestedSchema)
			if err != nil {
				return fail(fmt.Sprintf("request %q has a form schema nexa cannot use: %v", k, err))
			}
			r.Schema = schema
		case state.InputURL:
			u, err := url.Parse(p.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
				return fail(fmt.Sprintf("request %q names a URL that is not an http(s) address: %q", k, p.URL))
			}
			r.URL, r.Domain = p.URL, strings.ToLower(u.Hostname())
		default:
			return fail(fmt.Sprintf("request %q has mode %q, which nexa does not offer", k, r.Mode))
		}
		round.Requests = append(round.Requests, r)
	}
	return tool.Outcome{Output: fmt.Sprintf("MCP tool %s asked for input before it would run", name), Input: round}
}

// formSchema is the canonical encoding of a form's requested schema, which
// must be a JSON Schema object nexa can check answers against.
func formSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, fmt.Errorf("it has none")
	}
	out, d, err := canonicalValue(v)
	if err != nil {
		return nil, err
	}
	if _, ok := d.(map[string]any); !ok {
		return nil, fmt.Errorf("it is not a JSON object")
	}
	if _, err := schemacheck.Compile(out); err != nil {
		return nil, err
	}
	return out, nil
}
