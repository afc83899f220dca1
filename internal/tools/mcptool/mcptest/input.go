package mcptest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools that ask for input before they run (multi round-trip
// requests): each answers a first call with resultType input_required and
// a requestState naming the call's arguments, notes in asked.txt that it
// asked, and acts only on a retry that carries an accepted answer and the
// state it sent. They refuse to ask a client that does not declare
// elicitation on the call (per-request capabilities).
const (
	signUpSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Account name"},` +
		`"seats":{"type":"integer","minimum":1},"plan":{"type":"string","enum":["basic","team"]},"invoice":{"type":"boolean"}},"required":["name"]}`
	// ConsentURL is the address open_link asks the person to visit.
	ConsentURL = "https://consent.example.test/grant?req=42"
)

// declaresElicitation reports whether a call's per-request capabilities
// offer elicitation of the given mode.
func declaresElicitation(meta map[string]any, mode string) bool {
	caps, _ := meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	el, _ := caps["elicitation"].(map[string]any)
	_, ok := el[mode]
	return ok
}

func addInputTools(srv *mcp.Server, st *store) {
	textSchema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	notDestructive := &mcp.ToolAnnotations{DestructiveHint: new(bool)}
	srv.AddTool(&mcp.Tool{Name: "sign_up", Description: "Sign up for an account; asks who for.", InputSchema: textSchema, Annotations: notDestructive},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return askThenAct(st, req, "account", &mcp.ElicitParams{Mode: "form", Message: "Which account should be signed up?",
				RequestedSchema: json.RawMessage(signUpSchema)}, func(text string, content map[string]any) (string, error) {
				line := fmt.Sprintf("%s %v seats=%v", text, content["name"], content["seats"])
				if err := st.appendFile("signups.txt", line); err != nil {
					return "", err
				}
				return fmt.Sprintf("signed up %v", content["name"]), nil
			})
		})
	srv.AddTool(&mcp.Tool{Name: "open_link", Description: "Link an account; the person grants access at a URL.", InputSchema: textSchema, Annotations: notDestructive},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return askThenAct(st, req, "consent", &mcp.ElicitParams{Mode: "url", Message: "Grant access to your calendar.", URL: ConsentURL},
				func(text string, _ map[string]any) (string, error) {
					if err := st.appendFile("links.txt", text); err != nil {
						return "", err
					}
					return "linked " + text, nil
				})
		})
}

// askThenAct answers a first call with the input request ask under key,
// and a retry that carries an accepted answer with act's result.
func askThenAct(st *store, req *mcp.CallToolRequest, key string, ask *mcp.ElicitParams, act func(text string, content map[string]any) (string, error)) (*mcp.CallToolResult, error) {
	var a struct{ Text string }
	_ = json.Unmarshal(req.Params.Arguments, &a)
	state := "v1:" + req.Params.Name + ":" + a.Text
	text := func(s string, isErr bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}, IsError: isErr}
	}
	if req.Params.RequestState == "" && req.Params.InputResponses == nil {
		if !declaresElicitation(req.Params.Meta, ask.Mode) {
			return text("this tool needs "+ask.Mode+" elicitation, which the client does not offer", true), nil
		}
		st.mu.Lock()
		err := st.appendFile("asked.txt", req.Params.Name+" "+a.Text)
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: ask}, RequestState: state}, nil
	}
	if req.Params.RequestState != state {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState does not match this request"}
	}
	r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no answer for " + key}
	}
	if r.Action != "accept" {
		return text("nothing done: the person chose "+r.Action, true), nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out, err := act(a.Text, r.Content)
	if err != nil {
		return nil, err
	}
	return text(out, false), nil
}
