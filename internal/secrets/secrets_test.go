package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// distinctive is a secret value no error or formatted output may contain.
const distinctive = "sk-ZZtopSECRET-9f8e7d6c5b4a"

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := Parse("test.nxs", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestBlocksFlatMapsCommentsScalars(t *testing.T) {
	src := `// Secrets for the demo
/* a block comment
   spanning lines with "quotes" and config x { } */
# a hash comment
API_KEY = "flat-key-123"
TEMPERATURE = 0.7;
RETRIES = 3, ENABLED = true
NEG = -2.5e3
NOTHING = null
BASE_URL = https://api.example.com/v1   // bare 2.x value, then a comment
PADDED = abc==

config default {
    BASE_URL = "https://aihub.example/v1",
    API_KEY = "default-key-456",
    MODEL_NAME = {
        "strong": "minimax-m2.5",
        "weak": "deepseek-chat",
        super: "glm-5",
    }
    DEBUG = false;
}

config deepseek { API_KEY = 'ds-key-789'; BASE_URL = "https://api.deepseek.com" }
config default { EXTRA = "merged-into-default" }
TAGS = ["a", "b", 3]
MULTI = """line one
line "two" \n raw"""
ESC = "quote \" backslash \\ newline \n tab \t other \d"
`
	f := mustParse(t, src)
	str := func(m map[string]Value, k string) string {
		t.Helper()
		v, ok := m[k]
		if !ok {
			t.Fatalf("missing key %s", k)
		}
		return v.String()
	}
	checks := []struct{ got, want string }{
		{str(f.Flat, "API_KEY"), "flat-key-123"},
		{str(f.Flat, "TEMPERATURE"), "0.7"},
		{str(f.Flat, "RETRIES"), "3"},
		{str(f.Flat, "ENABLED"), "true"},
		{str(f.Flat, "NEG"), "-2.5e3"},
		{str(f.Flat, "NOTHING"), ""},
		{str(f.Flat, "BASE_URL"), "https://api.example.com/v1"},
		{str(f.Flat, "PADDED"), "abc=="},
		{str(f.Flat, "TAGS"), `["a","b",3]`},
		{str(f.Flat, "MULTI"), "line one\nline \"two\" \\n raw"},
		{str(f.Flat, "ESC"), "quote \" backslash \\ newline \n tab \t other \\d"},
		{str(f.Blocks["default"], "BASE_URL"), "https://aihub.example/v1"},
		{str(f.Blocks["default"], "DEBUG"), "false"},
		{str(f.Blocks["default"], "EXTRA"), "merged-into-default"},
		{str(f.Blocks["deepseek"], "API_KEY"), "ds-key-789"},
		{str(f.Blocks["default"], "MODEL_NAME"), `{"strong":"minimax-m2.5","super":"glm-5","weak":"deepseek-chat"}`},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %q, want %q", i, c.got, c.want)
		}
	}
	kinds := map[string]Kind{"API_KEY": String, "TEMPERATURE": Number, "ENABLED": Bool, "NOTHING": Null, "TAGS": List, "BASE_URL": String}
	for k, want := range kinds {
		if got := f.Flat[k].Kind(); got != want {
			t.Errorf("%s: kind %d, want %d", k, got, want)
		}
	}
	model := f.Blocks["default"]["MODEL_NAME"]
	if model.Kind() != Map {
		t.Fatalf("MODEL_NAME kind = %d", model.Kind())
	}
	if want := map[string]string{"strong": "minimax-m2.5", "weak": "deepseek-chat", "super": "glm-5"}; !reflect.DeepEqual(model.Map(), want) {
		t.Errorf("MODEL_NAME.Map() = %v", model.Map())
	}
	if v, ok := model.Get("weak"); !ok || v.String() != "deepseek-chat" {
		t.Errorf("Get(weak) = %v %v", v.String(), ok)
	}
	if !reflect.DeepEqual(model.Keys(), []string{"strong", "super", "weak"}) {
		t.Errorf("Keys() = %v", model.Keys())
	}
	if got := f.Flat["TAGS"].List(); len(got) != 3 || got[2].Kind() != Number {
		t.Errorf("TAGS list = %d items", len(got))
	}
	if f.Flat["API_KEY"].Map() != nil {
		t.Errorf("Map() of a string is not nil")
	}
}

// TestRealWorldShapes covers the two layouts 2.x documented (flat, and a
// config block with a nested map and trailing commas), a flat key named
// config, and a file without a final newline.
func TestRealWorldShapes(t *testing.T) {
	f := mustParse(t, "API_KEY = \"k1\"\nBASE_URL = \"https://x/v1\"\nconfig = \"not a block\"")
	if f.Flat["config"].String() != "not a block" || f.Flat["BASE_URL"].String() != "https://x/v1" {
		t.Fatalf("flat layout misparsed")
	}
	f = mustParse(t, "\ufeffconfig default {\n  BASE_URL = \"https://aihub/v1\",\n  API_KEY = \"k\",\n  MODEL_NAME = {\n    \"strong\": \"m1\",\n    \"weak\": \"m2\"\n  },\n}\n")
	if f.Blocks["default"]["MODEL_NAME"].Map()["weak"] != "m2" {
		t.Fatalf("block layout misparsed")
	}
	f = mustParse(t, "config default{\n    API_KEY = \"sk-...\"\n    MODEL_NAME = { \"default\": \"minimax-m2.5\" }\n}")
	if v, _ := Merge(f).Lookup("default", "MODEL_NAME.default"); v != "minimax-m2.5" {
		t.Fatalf("config default{ (no space) misparsed")
	}
	f = mustParse(t, "")
	if len(f.Flat) != 0 || len(f.Blocks) != 0 {
		t.Fatalf("empty file not empty")
	}
}

func TestErrorsArePositionedAndSecretFree(t *testing.T) {
	cases := []struct {
		name, src string
		pos       string // line:col of the first error
		msg       string
	}{
		{"missing equals", "API_KEY \"" + distinctive + "\"\n", "1:9", "expected `=` after a key, found a string"},
		{"unterminated string", "A = 1\nAPI_KEY = \"" + distinctive + "\n", "2:11", "unterminated string"},
		{"unterminated triple", "API_KEY = \"\"\"" + distinctive, "1:11", "unterminated \"\"\" string"},
		{"missing value", "config default {\n  API_KEY = \n}\n", "3:1", "expected a value (string, number, boolean, map or list) for API_KEY, found `}`"},
		{"unclosed block", "config default {\n  API_KEY = \"" + distinctive + "\"\n", "3:1", "expected `}` to close config default opened at 1:1"},
		{"unclosed map", "M = { \"strong\": \"" + distinctive + "\"", "1:46", "expected `}` to close the map of M opened at 1:5"},
		{"two values", "API_KEY = \"" + distinctive + "\" \"" + distinctive + "\"\n", "1:41", "expected a key or `config NAME {`, found a string"},
		{"bare words", "API_KEY = " + distinctive + " more" + distinctive + "\n", "1:45", "unexpected character (expected `=` after a key)"},
		{"bad char", "API_KEY = \"x\"\n$" + distinctive + "\n", "2:1", "unexpected character"},
		{"map key", "M = { \"" + distinctive + "\" \"v\" }", "1:37", "expected `:` after a map key in M, found a string"},
		{"unterminated comment", "/* " + distinctive, "1:1", "unterminated /* comment"},
		{"block name", "config { A = \"" + distinctive + "\" }", "1:8", "expected a block name after `config`, found `{`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("dir/secrets.nxs", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse succeeded: %v", f)
			}
			if f != nil {
				t.Errorf("Parse returned a File with an error")
			}
			msg := err.Error()
			if strings.Contains(msg, distinctive) || strings.Contains(msg, "ZZtop") || strings.Contains(msg, "more") {
				t.Fatalf("error leaks the secret: %s", msg)
			}
			first := strings.SplitN(msg, "\n", 2)[0]
			if !strings.HasPrefix(first, "dir/secrets.nxs:"+tc.pos+": ") {
				t.Errorf("first error %q, want position %s", first, tc.pos)
			}
			if !strings.Contains(first, tc.msg) {
				t.Errorf("first error %q, want %q", first, tc.msg)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Line == 0 {
				t.Errorf("error is not a positioned *Error")
			}
		})
	}
}

func TestSeveralErrorsReported(t *testing.T) {
	_, err := Parse("s.nxs", []byte("A \"x\"\nB = \"ok\"\nC = }\nD = \"ok\"\n"))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("err = %v, want 2 errors", err)
	}
	if list[0].Line != 1 || list[1].Line != 3 {
		t.Fatalf("error lines %d, %d", list[0].Line, list[1].Line)
	}
}

func TestHostileInputDoesNotHang(t *testing.T) {
	inputs := [][]byte{
		bytes.Repeat([]byte("{"), 100000),
		append([]byte("A = "), bytes.Repeat([]byte("["), 100000)...),
		append([]byte("A = "), bytes.Repeat([]byte("{\"k\": "), 10000)...),
		{0, 1, 2, 0xff, 0xfe, '"', 0x80},
		bytes.Repeat([]byte("A = \"x\"\n"), 20000),
		[]byte("config"),
		[]byte("config a"),
		[]byte("A ="),
		[]byte("A = \"\\"),
	}
	for i, in := range inputs {
		_, _ = Parse(fmt.Sprintf("in%d", i), in)
	}
}

func TestValuesAreRedactedWhenFormatted(t *testing.T) {
	f := mustParse(t, "API_KEY = \""+distinctive+"\"\nconfig default { K = \""+distinctive+"\" M = { \"a\": \""+distinctive+"\" } }\n")
	set := Merge(f)
	v, _ := set.Get("", "API_KEY")
	for _, s := range []string{
		fmt.Sprint(v), fmt.Sprintf("%v %s %q %#v %+v", v, v, v, v, v),
		fmt.Sprint(f), fmt.Sprintf("%v %+v %#v", f, f, f),
		fmt.Sprint(set), fmt.Sprintf("%v %+v %#v", set, set, set),
		fmt.Sprint(f.Flat), fmt.Sprint(set.Block("default")),
	} {
		if strings.Contains(s, distinctive) {
			t.Fatalf("formatting leaks the secret: %s", s)
		}
	}
	b, err := json.Marshal(set)
	if err != nil || bytes.Contains(b, []byte(distinctive)) {
		t.Fatalf("JSON of a Set: %s, %v", b, err)
	}
	if v.String() != distinctive {
		t.Fatalf("String() = %q, want the value", v.String())
	}
}

func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadMergesLaterFilesWin(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "secrets.nxs", `
API_KEY = "flat-a"
ONLY_A = "a"
config default { API_KEY = "def-a", BASE_URL = "url-a", MODEL_NAME = { "strong": "m1", "weak": "w1" } }
config other { API_KEY = "other-a" }
`)
	b := writeFile(t, dir, "override.nxs", `
API_KEY = "flat-b"
config default { API_KEY = "def-b", MODEL_NAME = { "strong": "m2" } }
`)
	set, err := Load(a, "", b)
	if err != nil {
		t.Fatal(err)
	}
	lookups := []struct {
		block, key, want string
		ok               bool
	}{
		{"", "API_KEY", "flat-b", true},
		{"", "ONLY_A", "a", true},
		{"default", "API_KEY", "def-b", true},
		{"default", "BASE_URL", "url-a", true},
		{"default", "MODEL_NAME.strong", "m2", true},
		{"default", "MODEL_NAME.weak", "", false}, // a map is replaced whole
		{"other", "API_KEY", "other-a", true},
		{"other", "BASE_URL", "", false},
		{"missing", "API_KEY", "", false},
		{"", "NOPE", "", false},
	}
	for _, l := range lookups {
		got, ok := set.Lookup(l.block, l.key)
		if got != l.want || ok != l.ok {
			t.Errorf("Lookup(%q, %q) = %q, %v; want %q, %v", l.block, l.key, got, ok, l.want, l.ok)
		}
	}
	if !reflect.DeepEqual(set.Files(), []string{a, b}) {
		t.Errorf("Files() = %v", set.Files())
	}
	if !reflect.DeepEqual(set.Blocks(), []string{"default", "other"}) || !set.HasBlock("other") || set.HasBlock("x") {
		t.Errorf("Blocks() = %v", set.Blocks())
	}
	if got := set.Block("default")["BASE_URL"].String(); got != "url-a" {
		t.Errorf("Block(default)[BASE_URL] = %q", got)
	}
	if set.Block("missing") != nil {
		t.Errorf("Block of a missing block is not nil")
	}
	// Copies: the caller cannot change the set.
	set.Flat()["API_KEY"] = Value{}
	if got, _ := set.Lookup("", "API_KEY"); got != "flat-b" {
		t.Errorf("Flat() is not a copy")
	}

	if _, err := Load(filepath.Join(dir, "absent.nxs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
	bad := writeFile(t, dir, "bad.nxs", "API_KEY = \""+distinctive)
	if _, err := Load(a, bad); err == nil || strings.Contains(err.Error(), distinctive) || !strings.Contains(err.Error(), "bad.nxs:1:11") {
		t.Errorf("Load of a bad file: %v", err)
	}
}

func TestEnvPrecedence(t *testing.T) {
	f := mustParse(t, `
SHARED = "flat"
FLAT_ONLY = "f"
GONE = null
config default { SHARED = "default", DEF_ONLY = "d", MODEL_NAME = { "strong": "m1" }, N = 3 }
config prod { SHARED = "prod", PROD_ONLY = "p", GONE = null }
`)
	set := Merge(f)
	env := set.Env("prod")
	want := map[string]string{"SHARED": "prod", "FLAT_ONLY": "f", "DEF_ONLY": "d", "PROD_ONLY": "p",
		"MODEL_NAME": `{"strong":"m1"}`, "N": "3"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env(prod) = %v\nwant %v", env, want)
	}
	env = set.Env("")
	want = map[string]string{"SHARED": "default", "FLAT_ONLY": "f", "DEF_ONLY": "d", "MODEL_NAME": `{"strong":"m1"}`, "N": "3"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env(\"\") = %v\nwant %v", env, want)
	}
	if got := set.Env("nonexistent")["SHARED"]; got != "default" {
		t.Errorf("Env(nonexistent)[SHARED] = %q", got)
	}
	var nilSet *Set
	if len(nilSet.Env("x")) != 0 || NewRedactor(nilSet.Strings()...).Redact("abcd") != "abcd" || nilSet.HasBlock("x") {
		t.Errorf("nil set is not empty")
	}
	if _, ok := nilSet.Lookup("", "x"); ok {
		t.Errorf("nil set Lookup found something")
	}
}

func TestRedactor(t *testing.T) {
	f := mustParse(t, `
API_KEY = "`+distinctive+`"
SHORT = "abc"
NUM = 123456
QUOTED = "pa\"ss\\word"
config default { KEY2 = "sk-ZZtop", MODEL_NAME = { "strong": "model-one" } }
`)
	redact := NewRedactor(Merge(f).Strings()...).Redact
	in := `error 401: invalid key ` + distinctive + ` (prefix sk-ZZtop), model model-one, abc, 123456, body {"key":"pa\"ss\\word"}`
	got := redact(in)
	want := `error 401: invalid key [REDACTED] (prefix [REDACTED]), model [REDACTED], abc, 123456, body {"key":"[REDACTED]"}`
	if got != want {
		t.Fatalf("redact:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(got, "ZZtop") {
		t.Fatalf("partial secret left: %s", got)
	}
	if NewRedactor(Merge().Strings()...).Redact("unchanged") != "unchanged" {
		t.Fatalf("empty set changed text")
	}
}

func TestRedactWriter(t *testing.T) {
	pem := "-----BEGIN KEY-----\nMIIEabc\n-----END KEY-----"
	f := mustParse(t, "API_KEY = \""+distinctive+"\"\nPEM = \"\"\""+pem+"\"\"\"\n")
	var out bytes.Buffer
	w := NewRedactor(Merge(f).Strings()...).Writer(&out)
	stream := "start " + distinctive + " middle\n" + pem + " end\npartial " + distinctive
	// Feed byte by byte: secrets are split across every possible boundary.
	for i := 0; i < len(stream); i++ {
		if _, err := w.Write([]byte{stream[i]}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "ZZtop") || strings.Contains(out.String(), "MIIEabc") {
			t.Fatalf("secret forwarded after %d bytes: %q", i+1, out.String())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "start [REDACTED] middle\n[REDACTED] end\npartial [REDACTED]"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}

	// A very long line without newline is forwarded in pieces, redacted.
	out.Reset()
	w = NewRedactor(Merge(f).Strings()...).Writer(&out)
	long := strings.Repeat("x", 70<<10) + distinctive + strings.Repeat("y", 70<<10)
	for i := 0; i < len(long); i += 1000 {
		_, _ = w.Write([]byte(long[i:min(i+1000, len(long))]))
	}
	if out.Len() == 0 {
		t.Errorf("nothing forwarded from a 140 KiB line")
	}
	_ = w.Close()
	if strings.Contains(out.String(), "ZZtop") || !strings.Contains(out.String(), "[REDACTED]") || out.Len() != len(long)-len(distinctive)+len("[REDACTED]") {
		t.Fatalf("long line redaction wrong (len %d)", out.Len())
	}
}

func TestUnnamedBlockIsSkipped(t *testing.T) {
	_, err := Parse("s.nxs", []byte("config { A = { \"k\": \"v\" } }\nB = \"ok\"\nconfig "+strings.Repeat("{", 50000)))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 || list[1].Line != 3 {
		t.Fatalf("err = %v", err)
	}
}

func TestURLPasswordSpanPointsAtThePasswordAsWritten(t *testing.T) {
	for _, s := range []string{"postgres://app:p%40ss@db/app?sslmode=disable", "  http://u:pw@proxy:3128", "mysql://u:p:with:colons@h/x"} {
		start, end, ok := URLPasswordSpan(s)
		if !ok || s[start:end] != URLPasswords(s)[0] {
			t.Errorf("URLPasswordSpan(%q) = %d, %d, %v", s, start, end, ok)
		}
	}
	for _, s := range []string{"postgres://u:@h/db", "postgres://u@h/db", "/a/b", ""} {
		if _, _, ok := URLPasswordSpan(s); ok {
			t.Errorf("URLPasswordSpan(%q) found a password", s)
		}
	}
}
