package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/stdlib"
)

// toolFor builds the ir.Tool the compiler emits for a built-in.
func toolFor(t *testing.T, name string) *ir.Tool {
	t.Helper()
	d, ok := stdlib.Lookup(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	return &ir.Tool{
		Name: d.Name, Description: d.Description, Parameters: d.Parameters, Returns: d.Returns,
		Risk: d.Risk, Timeout: d.Timeout, Idempotent: d.Idempotent, Body: ir.Body{Kind: ir.BodyBuiltin},
	}
}

// checkArgs validates test arguments against the tool's schema, as the
// runtime does before any execution, so tests never rely on arguments the
// runtime would refuse.
func checkArgs(t *testing.T, decl *ir.Tool, raw []byte) {
	t.Helper()
	sch, err := schemacheck.Compile(decl.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	v, err := schemacheck.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ps := sch.Validate(v); len(ps) > 0 {
		t.Fatalf("test arguments for %s do not match its schema: %s", decl.Name, schemacheck.Explain(ps, 50))
	}
}

type runOpts struct {
	workDir string
	timeout time.Duration
	log     io.Writer
	opts    Options
	// agentAllow is the agent's http_allow, carried by the invocation.
	agentAllow []string
}

func execTool(t *testing.T, ro runOpts, name string, args map[string]any) (tool.Outcome, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	decl := toolFor(t, name)
	checkArgs(t, decl, raw)
	timeout := ro.timeout
	if timeout == 0 {
		timeout = time.Duration(decl.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return New(ro.opts).Execute(ctx, tool.Invocation{
		RunID: "run1", CallID: "call1", Tool: decl, Arguments: raw,
		WorkDir: ro.workDir, Timeout: timeout, Log: ro.log, HTTPAllow: ro.agentAllow,
	})
}

// mustRun expects a known outcome with the given success flag.
func mustRun(t *testing.T, ro runOpts, name string, args map[string]any, success bool) string {
	t.Helper()
	out, err := execTool(t, ro, name, args)
	if err != nil {
		t.Fatalf("%s(%v): unexpected error %v", name, args, err)
	}
	if out.Success != success {
		t.Fatalf("%s(%v): success %v, want %v; output %q", name, args, out.Success, success, out.Output)
	}
	// Failures are "error: …" text, except the structured results of a
	// command that exited non-zero or an HTTP error status.
	if !success && !strings.HasPrefix(out.Output, "error: ") && !(strings.HasPrefix(out.Output, "{") && (name == "shell_exec" || strings.HasPrefix(name, "http_"))) {
		t.Errorf("%s: failure text should start with 'error: ': %q", name, out.Output)
	}
	if out.Sandboxed {
		t.Errorf("%s: built-ins are never sandboxed", name)
	}
	return out.Output
}

func TestEveryDeclaredToolIsImplemented(t *testing.T) {
	e := New(Options{})
	var declared, implemented []string
	for _, d := range stdlib.All() {
		declared = append(declared, d.Name)
	}
	for n := range e.handlers {
		implemented = append(implemented, n)
	}
	sort.Strings(declared)
	sort.Strings(implemented)
	if strings.Join(declared, ",") != strings.Join(implemented, ",") {
		t.Fatalf("declared %v\nimplemented %v", declared, implemented)
	}
}

// TestOnlyShellReachesTheStore: a run that called shell_exec (or a tool
// this build does not know) has its store checked whole when it stops;
// every other built-in is confined (docs/runs.md, "The store").
func TestOnlyShellReachesTheStore(t *testing.T) {
	e := New(Options{})
	for _, d := range stdlib.All() {
		if got, want := e.ReachesStore(&ir.Tool{Name: d.Name}), d.Name == "shell_exec"; got != want {
			t.Errorf("ReachesStore(%s) = %v, want %v", d.Name, got, want)
		}
	}
	if !e.ReachesStore(&ir.Tool{Name: "file_chmod"}) {
		t.Error("a decl the list does not know must be taken to reach the store")
	}
}

func TestRefusesWhatIsNotABuiltin(t *testing.T) {
	e := New(Options{})
	ctx := context.Background()
	cases := map[string]tool.Invocation{
		"no tool":     {},
		"unknown":     {Tool: &ir.Tool{Name: "rm_rf"}, Arguments: []byte(`{}`)},
		"sandboxed":   {Tool: &ir.Tool{Name: "text_upper", Sandbox: true}, Arguments: []byte(`{"text":"a"}`)},
		"no workdir":  {Tool: toolFor(t, "file_read"), Arguments: []byte(`{"path":"a"}`)},
		"shell no wd": {Tool: toolFor(t, "shell_exec"), Arguments: []byte(`{"command":"true"}`)},
	}
	for name, inv := range cases {
		_, err := e.Execute(ctx, inv)
		if !errors.Is(err, tool.ErrNotExecuted) || errors.Is(err, tool.ErrUnknownOutcome) {
			t.Errorf("%s: err %v, want ErrNotExecuted", name, err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Execute(done, tool.Invocation{Tool: toolFor(t, "text_upper"), Arguments: []byte(`{"text":"a"}`)}); !errors.Is(err, tool.ErrNotExecuted) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestBadArgumentsAreAKnownFailure(t *testing.T) {
	e := New(Options{})
	out, err := e.Execute(context.Background(), tool.Invocation{Tool: toolFor(t, "text_upper"), Arguments: []byte(`{"text":"a","extra":1}`)})
	if err != nil || out.Success || !strings.Contains(out.Output, "extra") {
		t.Fatalf("got %+v %v", out, err)
	}
}

func TestHeadTail(t *testing.T) {
	h := newHeadTail(10)
	for i := 0; i < 100; i++ {
		if n, err := h.Write([]byte("abcdefghij")); n != 10 || err != nil {
			t.Fatal(n, err)
		}
	}
	s, cut := h.String()
	if !cut || !strings.HasPrefix(s, "abcde") || !strings.HasSuffix(s, "fghij") || !strings.Contains(s, "990 bytes omitted") {
		t.Fatalf("%q %v", s, cut)
	}
	h = newHeadTail(10)
	_, _ = h.Write([]byte("short"))
	if s, cut := h.String(); cut || s != "short" {
		t.Fatalf("%q %v", s, cut)
	}
	h = newHeadTail(10)
	_, _ = h.Write([]byte("0123456789"))
	if s, cut := h.String(); cut || s != "0123456789" {
		t.Fatalf("exactly the limit: %q %v", s, cut)
	}
	// Multi-byte characters are never split by the marker.
	h = newHeadTail(8)
	_, _ = h.Write([]byte(strings.Repeat("é", 20)))
	if s, _ := h.String(); strings.ContainsRune(s, '\uFFFD') {
		t.Fatalf("split rune: %q", s)
	}
}

func TestCapOutput(t *testing.T) {
	s := capOutput(strings.Repeat("é", 10), 5)
	if !strings.HasPrefix(s, "éé\n[output truncated") {
		t.Fatalf("%q", s)
	}
	if capOutput("abc", 5) != "abc" {
		t.Fatal("short output changed")
	}
}
