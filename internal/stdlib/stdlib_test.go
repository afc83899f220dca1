package stdlib

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/schemacheck"
)

// checked is a compiled schema whose Validate reports all problems as one
// error, or nil.
type checked struct{ s *schemacheck.Schema }

func (c checked) Validate(v any) error {
	if ps := c.s.Validate(v); len(ps) > 0 {
		return errors.New(schemacheck.Explain(ps, 50))
	}
	return nil
}

func compile(t *testing.T, name string, raw json.RawMessage) checked {
	t.Helper()
	s, err := schemacheck.Compile(raw)
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", name, err)
	}
	return checked{s}
}

type shape struct {
	Type       string `json:"type"`
	Properties map[string]struct {
		Description string          `json:"description"`
		Type        string          `json:"type"`
		Default     json.RawMessage `json:"default"`
		Enum        []any           `json:"enum"`
	} `json:"properties"`
	Required             []string `json:"required"`
	AdditionalProperties *bool    `json:"additionalProperties"`
}

// sample builds the smallest valid arguments: every required property with
// a value of its type.
func sample(t *testing.T, name string, s shape) map[string]any {
	t.Helper()
	args := map[string]any{}
	for _, r := range s.Required {
		p := s.Properties[r]
		switch {
		case len(p.Enum) > 0:
			args[r] = p.Enum[0]
		case p.Type == "string":
			args[r] = "x"
		case p.Type == "integer":
			args[r] = json.Number("1")
		case p.Type == "boolean":
			args[r] = true
		case p.Type == "array":
			args[r] = []any{"a"}
		case p.Type == "object":
			args[r] = map[string]any{}
		case p.Type == "":
			args[r] = "anything"
		default:
			t.Fatalf("%s: no sample for type %q", name, p.Type)
		}
	}
	return args
}

func TestEveryToolSchema(t *testing.T) {
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, tool := range All() {
		t.Run(tool.Name, func(t *testing.T) {
			if !nameRE.MatchString(tool.Name) {
				t.Errorf("bad name %q", tool.Name)
			}
			if tool.Description == "" || tool.Returns != "string" || tool.Timeout <= 0 {
				t.Errorf("incomplete declaration: %+v", tool)
			}
			switch tool.Risk {
			case RiskLow, RiskHigh:
			default:
				t.Errorf("risk %q", tool.Risk)
			}
			if tool.Risk == RiskHigh && tool.Idempotent {
				t.Errorf("a high-risk tool must not be re-executed on resume")
			}
			sch := compile(t, tool.Name, tool.Parameters)
			var s shape
			dec := json.NewDecoder(bytes.NewReader(tool.Parameters))
			if err := dec.Decode(&s); err != nil {
				t.Fatal(err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || s.Required == nil {
				t.Errorf("schema must be an object with required and additionalProperties false: %s", tool.Parameters)
			}
			for name, p := range s.Properties {
				if strings.TrimSpace(p.Description) == "" {
					t.Errorf("property %s has no description", name)
				}
				if p.Default != nil && slices.Contains(s.Required, name) {
					t.Errorf("required property %s has a default", name)
				}
			}
			for _, r := range s.Required {
				if _, ok := s.Properties[r]; !ok {
					t.Errorf("required %s is not a property", r)
				}
			}
			args := sample(t, tool.Name, s)
			if err := sch.Validate(args); err != nil {
				t.Errorf("minimal arguments %v rejected: %v", args, err)
			}
			// Every declared default must itself be valid.
			full := map[string]any{}
			for k, v := range args {
				full[k] = v
			}
			for name, p := range s.Properties {
				if p.Default != nil {
					v, err := schemacheck.Decode(p.Default)
					if err != nil {
						t.Fatal(err)
					}
					full[name] = v
				}
			}
			if err := sch.Validate(full); err != nil {
				t.Errorf("defaults rejected: %v", err)
			}
			args["unexpected_extra"] = "x"
			if err := sch.Validate(args); err == nil {
				t.Errorf("extra property accepted")
			}
			if len(s.Required) > 0 {
				missing := sample(t, tool.Name, s)
				delete(missing, s.Required[0])
				if err := sch.Validate(missing); err == nil {
					t.Errorf("missing %s accepted", s.Required[0])
				}
			}
		})
	}
}

func TestRisksOfRuntimeSpec(t *testing.T) {
	want := map[string]string{
		"file_read": "low", "file_list": "low", "file_exists": "low",
		"file_write": "high", "file_append": "high", "file_edit": "high", "file_delete": "high",
		"shell_exec": "high", "shell_which": "low",
		"http_get": "low", "http_post": "high", "http_put": "high", "http_delete": "high",
	}
	for name, risk := range want {
		tool, ok := Lookup(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if tool.Risk != risk {
			t.Errorf("%s risk %s, want %s", name, tool.Risk, risk)
		}
	}
	for _, ns := range []string{"std.time", "std.json", "std.text", "std.hash", "std.math", "std.regex"} {
		list, ok := Tools(ns)
		if !ok || len(list) == 0 {
			t.Fatalf("%s has no tools", ns)
		}
		for _, tool := range list {
			if tool.Risk != RiskLow || !tool.Idempotent {
				t.Errorf("%s: pure tools are low risk and idempotent", tool.Name)
			}
		}
	}
}

func TestNamespacesAndLookup(t *testing.T) {
	want := []string{"std.fs", "std.shell", "std.http", "std.time", "std.json", "std.text", "std.hash", "std.math", "std.regex"}
	if got := Namespaces(); !slices.Equal(got, want) {
		t.Fatalf("Namespaces() = %v", got)
	}
	seen := map[string]bool{}
	total := 0
	for _, ns := range want {
		full, ok := Tools(ns)
		short, ok2 := Tools(strings.TrimPrefix(ns, Prefix))
		if !ok || !ok2 || len(full) != len(short) {
			t.Fatalf("Tools(%s) / short form disagree", ns)
		}
		for _, tool := range full {
			if tool.Namespace != ns {
				t.Errorf("%s in %s says namespace %s", tool.Name, ns, tool.Namespace)
			}
			if seen[tool.Name] {
				t.Errorf("duplicate tool name %s", tool.Name)
			}
			seen[tool.Name] = true
			got, ok := Lookup(tool.Name)
			if !ok || got.Namespace != ns {
				t.Errorf("Lookup(%s) = %v %v", tool.Name, got, ok)
			}
			total++
		}
	}
	if total != len(All()) {
		t.Errorf("All() has %d tools, namespaces %d", len(All()), total)
	}
	if _, ok := Tools("std.nope"); ok {
		t.Error("unknown namespace accepted")
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("unknown tool found")
	}
	// Callers cannot change the catalog through a returned value.
	a, _ := Lookup("file_read")
	a.Parameters[0] = 'X'
	b, _ := Lookup("file_read")
	if b.Parameters[0] != '{' {
		t.Error("Lookup returns an alias of the catalog")
	}
}

func TestTwoThreeNamesKept(t *testing.T) {
	// Tool names of Nexa 2.3 for the namespaces of docs/reference/runtime.md#tool-execution; prompts
	// written for 2.3 name them.
	for _, n := range []string{
		"file_read", "file_write", "file_exists", "file_list", "file_append", "file_delete", "file_edit",
		"http_get", "http_post", "http_put", "http_delete",
		"time_now", "time_diff", "time_format",
		"text_split", "text_replace", "text_upper", "text_lower",
		"json_parse", "json_get", "json_stringify",
		"hash_md5", "hash_sha256", "base64_encode", "base64_decode",
		"math_calc", "math_random", "regex_match", "regex_replace", "shell_exec", "shell_which",
	} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s missing", n)
		}
	}
}
