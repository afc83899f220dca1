package mcptool

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseSpec(t *testing.T) {
	ok := []struct {
		in   string
		want Spec
	}{
		{"http://localhost:8080/mcp", Spec{Raw: "http://localhost:8080/mcp", Transport: TransportHTTP, URL: "http://localhost:8080/mcp"}},
		{"  HTTPS://example.com/mcp?x=1 ", Spec{Raw: "HTTPS://example.com/mcp?x=1", Transport: TransportHTTP, URL: "HTTPS://example.com/mcp?x=1"}},
		{"stdio:python3 server.py", Spec{Raw: "stdio:python3 server.py", Transport: TransportStdio, Command: "python3", Args: []string{"server.py"}}},
		{"stdio:  npx -y   @modelcontextprotocol/server-filesystem  /tmp ", Spec{Raw: "stdio:  npx -y   @modelcontextprotocol/server-filesystem  /tmp", Transport: TransportStdio,
			Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}}},
		{`stdio:srv 'a b' "c d" e\ f`, Spec{Raw: `stdio:srv 'a b' "c d" e\ f`, Transport: TransportStdio, Command: "srv", Args: []string{"a b", "c d", "e f"}}},
		{`stdio:srv 'it'\''s' "say \"hi\" \$HOME \n" '' ""`, Spec{Raw: `stdio:srv 'it'\''s' "say \"hi\" \$HOME \n" '' ""`, Transport: TransportStdio,
			Command: "srv", Args: []string{"it's", `say "hi" $HOME \n`, "", ""}}},
		{`stdio:srv a'b'"c"d '$HOME' "|" '>' x=$ a$`, Spec{Raw: `stdio:srv a'b'"c"d '$HOME' "|" '>' x=$ a$`, Transport: TransportStdio,
			Command: "srv", Args: []string{"abcd", "$HOME", "|", ">", "x=$", "a$"}}},
		{"stdio:'/path with space/srv' --flag=1", Spec{Raw: "stdio:'/path with space/srv' --flag=1", Transport: TransportStdio, Command: "/path with space/srv", Args: []string{"--flag=1"}}},
		{"STDIO:srv", Spec{Raw: "STDIO:srv", Transport: TransportStdio, Command: "srv", Args: []string{}}},
	}
	for _, c := range ok {
		got, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		if len(got.Args) == 0 && len(c.want.Args) == 0 {
			got.Args, c.want.Args = nil, nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseSpec(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}

	bad := []struct{ in, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"server.py", "unsupported"},
		{"ftp://example.com", "unsupported"},
		{"sse://example.com", "unsupported"},
		{"ws://example.com/mcp", "unsupported"},
		{"python3 server.py", "unsupported"},
		{"http://", "no host"},
		{"https:///path", "no host"},
		{"http://exa mple.com/", "invalid"},
		{"stdio:", "names no command"},
		{"stdio:   ", "names no command"},
		{"stdio:''", "names no command"},
		{"stdio:srv 'open", "unterminated single quote"},
		{`stdio:srv "open`, "unterminated double quote"},
		{`stdio:srv \`, "lone backslash"},
		{"stdio:srv | tee log", `unquoted "|"`},
		{"stdio:srv > log", `unquoted ">"`},
		{"stdio:srv; rm -rf x", `unquoted ";"`},
		{"stdio:srv &", `unquoted "&"`},
		{"stdio:srv `id`", "unquoted \"`\""},
		{"stdio:srv $HOME", `unquoted "$"`},
		{"stdio:srv ${X}", `unquoted "$"`},
		{"stdio:srv $(id)", `unquoted "$"`},
	}
	for _, c := range bad {
		got, err := ParseSpec(c.in)
		if err == nil {
			t.Errorf("ParseSpec(%q) = %#v, want an error", c.in, got)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q): %v, want it to mention %q", c.in, err, c.want)
		}
	}
	_, err := ParseSpec("stdio:srv | tee")
	if err == nil || !strings.Contains(err.Error(), "without a shell") {
		t.Errorf("shell operator error should say why: %v", err)
	}
}

func TestRiskOf(t *testing.T) {
	f, tr := boolp(false), boolp(true)
	cases := []struct {
		a    Annotations
		want string
	}{
		{Annotations{}, RiskHigh},                                   // nothing said: destructive
		{Annotations{ReadOnly: true}, RiskLow},                      // read-only
		{Annotations{ReadOnly: true, Destructive: tr}, RiskLow},     // read-only wins
		{Annotations{Destructive: f}, RiskMedium},                   // additive only
		{Annotations{Destructive: f, Idempotent: true}, RiskMedium}, // idempotence does not lower it
		{Annotations{Destructive: tr}, RiskHigh},
		{Annotations{Idempotent: true}, RiskHigh},
		{Annotations{OpenWorld: f}, RiskHigh},
	}
	for _, c := range cases {
		if got := riskOf(c.a, true); got != c.want {
			t.Errorf("riskOf(%+v, trusted) = %s, want %s", c.a, got, c.want)
		}
		// An untrusted server's claims lower nothing.
		if got := riskOf(c.a, false); got != RiskHigh {
			t.Errorf("riskOf(%+v, untrusted) = %s, want high", c.a, got)
		}
	}
	// Through the SDK type, as listed: nil annotations are high.
	for _, c := range []struct {
		tool *mcp.Tool
		risk string
		idem bool
	}{
		{&mcp.Tool{Name: "a"}, RiskHigh, false},
		{&mcp.Tool{Name: "b", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, RiskLow, false},
		{&mcp.Tool{Name: "c", Annotations: &mcp.ToolAnnotations{DestructiveHint: f, IdempotentHint: true}}, RiskMedium, true},
		{&mcp.Tool{Name: "d", Annotations: &mcp.ToolAnnotations{DestructiveHint: tr}}, RiskHigh, false},
	} {
		ti, err := toolInfo(c.tool, true)
		if err != nil || ti.Risk != c.risk || ti.Idempotent != c.idem || !ti.Trusted {
			t.Errorf("toolInfo(%s, trusted) = %+v, %v; want risk %s idempotent %v", c.tool.Name, ti, err, c.risk, c.idem)
		}
		// Untrusted: high, never idempotent, the annotations kept (they
		// are hashed and shown).
		ti, err = toolInfo(c.tool, false)
		if err != nil || ti.Risk != RiskHigh || ti.Idempotent || ti.Trusted || (c.tool.Annotations != nil && ti.Annotations == Annotations{}) {
			t.Errorf("toolInfo(%s, untrusted) = %+v, %v; want risk high, not idempotent", c.tool.Name, ti, err)
		}
	}
}

func TestTrustSetting(t *testing.T) {
	for _, c := range []struct {
		in      string
		trusted bool
		env     []string
		cmd     string
	}{
		{"stdio:srv", false, nil, "srv"},
		{"stdio:trust=annotations srv --flag", true, nil, "srv"},
		{"stdio:A=1 trust='annotations' B=$S srv", true, []string{"A", "B"}, "srv"},
		// TRUST in capitals stays a variable of the server, and a trust=
		// word after the command is an argument.
		{"stdio:TRUST=annotations srv trust=annotations", false, []string{"TRUST"}, "srv"},
		{"https://h.example/mcp", false, nil, ""},
		{"https://h.example/mcp trust=annotations", true, nil, ""},
		{"https://h.example/mcp client_id=a client_secret=$S token_url=https://a/t trust=annotations", true, nil, ""},
	} {
		sp, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		var env []string
		for _, e := range sp.Env {
			env = append(env, e.Name)
		}
		if sp.TrustAnnotations != c.trusted || !reflect.DeepEqual(env, c.env) || sp.Command != c.cmd || sp.Raw != c.in {
			t.Errorf("ParseSpec(%q) = %#v; want trusted %v, env %v, command %q", c.in, sp, c.trusted, c.env, c.cmd)
		}
	}
	if sp, _ := ParseSpec("https://h.example/mcp trust=annotations client_id=a client_secret=$S token_url=https://a/t"); sp.OAuth == nil || !sp.TrustAnnotations {
		t.Errorf("trust and credentials together: %#v", sp)
	}
	// Anything that is not exactly trust=annotations is an error, never a
	// quiet "untrusted" (or trusted).
	for _, c := range []struct{ in, want string }{
		{"stdio:trust=yes srv", "the only trust setting is trust=annotations"},
		{"stdio:trust= srv", "the only trust setting"},
		{"stdio:trust=$T srv", "the only trust setting"},
		{"stdio:trust=annotations trust=annotations srv", "given twice"},
		{"stdio:trust=annotations", "names no command"},
		{"https://h/mcp trust=all", "the only trust setting"},
		{"https://h/mcp trust=annotations trust=annotations", "given twice"},
		{"https://h/mcp trusted=annotations", `unknown setting "trusted"`},
		{"https://h/mcp trust=annotations client_id=a", "client_secret is missing"},
	} {
		if _, err := ParseSpec(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q): %v, want %q", c.in, err, c.want)
		}
	}
}

func TestNormalizeSchema(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, `{"properties":{},"type":"object"}`},
		{map[string]any{}, `{"properties":{},"type":"object"}`},
		{map[string]any{"properties": map[string]any{"x": map[string]any{"type": "string"}}}, `{"properties":{"x":{"type":"string"}},"type":"object"}`},
		{map[string]any{"type": "string"}, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"description": "<a> & b"}}},
			`{"properties":{"a":{"description":"<a> & b"}},"required":["a"],"type":"object"}`},
		{json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":10000000000000001}}}`),
			`{"properties":{"n":{"maximum":10000000000000001,"type":"integer"}},"type":"object"}`},
		{json.RawMessage(`true`), `{"properties":{},"type":"object"}`},
		{"not a schema", `{"properties":{},"type":"object"}`},
	}
	for _, c := range cases {
		got, err := normalizeSchema(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("normalizeSchema(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := normalizeSchema(func() {}); err == nil {
		t.Error("an unencodable schema was accepted")
	}
}

func TestResultText(t *testing.T) {
	cases := []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{&mcp.CallToolResult{}, ""},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)}}}, `{"bytes":10,"mimeType":"audio/wav","type":"audio"}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Blob: []byte("xyz")}}}}, `{"bytes":3,"type":"resource","uri":"file:///b"}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///c", Name: "c"}}}, `{"name":"c","type":"resource_link","uri":"file:///c"}`},
		{&mcp.CallToolResult{StructuredContent: []any{1, "x"}}, `[1,"x"]`},
		// Structured content goes to the model with the text, once.
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: map[string]any{"x": 1}}, "t\n{\"x\":1}"},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{ "x" : 1 }`}}, StructuredContent: map[string]any{"x": 1}}, `{ "x" : 1 }`},
	}
	for _, c := range cases {
		if got := structuredOutcome(ToolInfo{}, c.res).Output; got != c.want {
			t.Errorf("outcome text = %q, want %q", got, c.want)
		}
	}
}

func TestCallArguments(t *testing.T) {
	for in, want := range map[string]string{"": "{}", "  ": "{}", "null": "{}", ` {"a":1} `: `{"a":1}`} {
		got, err := callArguments(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("callArguments(%q) = %s, %v", in, got, err)
		}
	}
	for _, in := range []string{`[]`, `"x"`, `1`, `{"a":`, `{} {}`} {
		if _, err := callArguments(json.RawMessage(in)); err == nil {
			t.Errorf("callArguments(%q) accepted", in)
		}
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("a\nb\n c \nd\n", 2); got != "c | d" {
		t.Errorf("lastLines = %q", got)
	}
}

func TestSpecAssignmentsGiveAServerItsOwnSecrets(t *testing.T) {
	sp, err := ParseSpec(`stdio:GITHUB_PERSONAL_ACCESS_TOKEN=$GH_TOKEN AUTH="Bearer ${API}" LEVEL=debug EMPTY= npx -y server --flag=$ 'A=$B'`)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Command != "npx" || !reflect.DeepEqual(sp.Args, []string{"-y", "server", "--flag=$", "A=$B"}) {
		t.Fatalf("command %q args %q", sp.Command, sp.Args)
	}
	secrets := map[string]string{"GH_TOKEN": "ghp_1", "API": "k2"}
	lookup := func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }
	env, err := serverEnv(sp, Options{Secret: lookup, Env: []string{"LEVEL=overridden-by-spec"}})
	if err != nil {
		t.Fatal(err)
	}
	tail := env[len(env)-5:]
	want := []string{"LEVEL=overridden-by-spec", "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_1", "AUTH=Bearer k2", "LEVEL=debug", "EMPTY="}
	if !reflect.DeepEqual(tail, want) {
		t.Fatalf("env tail %q, want %q", tail, want)
	}
	if refs := sp.Env[1].Refs(); !reflect.DeepEqual(refs, []string{"API"}) {
		t.Errorf("refs %q", refs)
	}

	// A missing secret names the variable, never a value; no lookup at all
	// resolves nothing.
	_, err = serverEnv(sp, Options{Secret: func(n string) (string, bool) {
		if n == "GH_TOKEN" {
			return "ghp_1", true
		}
		return "", false
	}})
	if err == nil || !strings.Contains(err.Error(), "AUTH=$API") || strings.Contains(err.Error(), "ghp_1") {
		t.Fatalf("missing secret: %v", err)
	}
	if _, err := serverEnv(sp, Options{}); err == nil {
		t.Fatal("a spec with $NAME started without a secret lookup")
	}

	// Only what the SDKs pass by default comes from nexa's environment.
	t.Setenv("OPENAI_API_KEY", "sk-must-not-pass")
	t.Setenv("LANG", "C.UTF-8")
	env, err = serverEnv(Spec{Command: "srv"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "sk-must-not-pass") || !strings.Contains(joined, "LANG=C.UTF-8") {
		t.Fatalf("server env %q", env)
	}

	for in, want := range map[string]string{
		`stdio:srv X=$Y`:        `"$" of $Y`,
		`stdio:X=$Y`:            `names no command`,
		`stdio:X=${1} srv`:      `unquoted "$"`,
		`stdio:"X=$Y" srv`:      `"$" of $Y`,
		`stdio:X=a srv "$HOME"`: `"$" of $HOME`,
	} {
		if _, err := ParseSpec(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpec(%s): %v, want %q", in, err, want)
		}
	}
}
