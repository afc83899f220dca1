package builtin

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

type pureCase struct {
	tool string
	args map[string]any
	want string // exact output, or with a leading "~" a substring
	ok   bool
}

func runPure(t *testing.T, cases []pureCase) {
	t.Helper()
	fixed := time.Date(2024, 5, 1, 10, 30, 15, 123456789, time.UTC)
	ro := runOpts{opts: Options{Now: func() time.Time { return fixed }}}
	for i, c := range cases {
		got := mustRun(t, ro, c.tool, c.args, c.ok)
		if sub, isSub := strings.CutPrefix(c.want, "~"); isSub {
			if !strings.Contains(got, sub) {
				t.Errorf("#%d %s(%v) = %q, want it to contain %q", i, c.tool, c.args, got, sub)
			}
		} else if got != c.want {
			t.Errorf("#%d %s(%v) = %q, want %q", i, c.tool, c.args, got, c.want)
		}
	}
}

type m = map[string]any

func TestTimeTools(t *testing.T) {
	runPure(t, []pureCase{
		{"time_now", m{}, `{"time":"2024-05-01T10:30:15Z","timezone":"UTC","unix":1714559415,"weekday":"Wednesday"}`, true},
		{"time_now", m{"timezone": "Europe/Paris", "format": "%Y-%m-%d %H:%M %Z"}, `~"time":"2024-05-01 12:30 CEST"`, true},
		{"time_now", m{"timezone": "+05:30", "format": "datetime"}, `~"time":"2024-05-01 16:00:15"`, true},
		{"time_now", m{"format": "unix_ms"}, `~"time":"1714559415123"`, true},
		{"time_now", m{"timezone": "Mars/Olympus"}, "~unknown time zone", false},
		{"time_now", m{"format": "YYYY-MM-DD"}, "~unknown format", false},
		{"time_format", m{"time": "2024-05-01T10:00:00Z", "format": "%A %d %B %Y, %I:%M %p"}, "Wednesday 01 May 2024, 10:00 AM", true},
		{"time_format", m{"time": "2024-05-01T10:00:00Z", "format": "rfc1123", "timezone": "America/New_York"}, "Wed, 01 May 2024 06:00:00 EDT", true},
		{"time_format", m{"time": "2024-05-01 10:00", "format": "rfc3339", "timezone": "Asia/Tokyo"}, "2024-05-01T10:00:00+09:00", true},
		{"time_format", m{"time": "2024-05-01", "format": "%j %u %w %V %y %e|%%"}, "122 3 3 18 24  1|%", true},
		{"time_format", m{"time": "1714559415", "format": "rfc3339"}, "2024-05-01T10:30:15Z", true},
		{"time_format", m{"time": "2024-05-01T10:00:00.5+02:00", "format": "%H:%M:%S.%f %z %:z"}, "10:00:00.500000 +0200 +02:00", true},
		{"time_format", m{"time": "yesterday", "format": "date"}, "~cannot read", false},
		{"time_format", m{"time": "2024-05-01", "format": "%q"}, "~unsupported strftime directive %q", false},
		{"time_format", m{"time": "2024-05-01", "format": "%Y %"}, "~format ends with a lone %", false},
		{"time_format", m{"time": "2024-05-01T09:05:00Z", "format": "%-d/%-m %-H:%M %Q %U"}, "1/5 9:05 1714554300000 17", true},
		{"time_parse", m{"text": "14:30", "format": "%H:%M", "timezone": "Europe/Paris"}, `~"time":"1900-01-01T14:30:00+00:09"`, true},
		{"time_parse", m{"text": "2024-05-01 CEST", "format": "%Y-%m-%d %Z"}, "~unsupported strptime directive %Z", false},
		{"time_parse", m{"text": "1714557600", "format": "%s"}, "~unsupported strptime directive %s", false},
		{"time_parse", m{"text": "01/05/2024 14:30", "format": "%d/%m/%Y %H:%M"}, `{"time":"2024-05-01T14:30:00Z","unix":1714573800,"weekday":"Wednesday"}`, true},
		{"time_parse", m{"text": "May 1, 2024 2:30 pm", "format": "%B %d, %Y %I:%M %p", "timezone": "Europe/London"}, `~"time":"2024-05-01T14:30:00+01:00"`, true},
		{"time_parse", m{"text": "Wed, 1 may 24 14:30:00.25 +0530", "format": "%a, %d %b %y %H:%M:%S.%f %z"}, `~"time":"2024-05-01T14:30:00.25+05:30"`, true},
		{"time_parse", m{"text": "2024-05-01T10:00:00Z"}, `~"unix":1714557600`, true},
		{"time_parse", m{"text": "1714557600", "format": "unix"}, `~"time":"2024-05-01T10:00:00Z"`, true},
		{"time_parse", m{"text": "2024-02-30", "format": "%Y-%m-%d"}, "~not a valid date", false},
		{"time_parse", m{"text": "2024-13-01", "format": "%Y-%m-%d"}, "~out of range", false},
		{"time_parse", m{"text": "2024-05-01 junk", "format": "%Y-%m-%d"}, "~extra text", false},
		{"time_parse", m{"text": "2024/05/01", "format": "%Y-%m-%d"}, "~does not match", false},
		{"time_add", m{"time": "2024-05-01T10:00:00Z", "duration": "1h30m"}, "2024-05-01T11:30:00Z", true},
		{"time_add", m{"time": "2024-05-01T10:00:00+02:00", "duration": "-2d 3h"}, "2024-04-29T07:00:00+02:00", true},
		{"time_add", m{"time": "2024-05-01", "duration": "1w", "months": 1, "years": -1}, "2023-06-08T00:00:00Z", true},
		{"time_add", m{"time": "2024-05-01", "duration": "90 minutes"}, "2024-05-01T01:30:00Z", true},
		{"time_add", m{"time": "2024-05-01", "duration": "soon"}, "~cannot read duration", false},
		{"time_add", m{"time": "2024-05-01", "duration": "45"}, "2024-05-01T00:00:45Z", true},
		{"time_add", m{"time": "2024-05-01", "duration": "30d"}, "2024-05-31T00:00:00Z", true},
		{"time_diff", m{"start": "2024-05-01T10:00:00Z", "end": "2024-05-01T12:30:00Z", "unit": "hours"}, `{"duration":"2h30m0s","unit":"hours","value":2.5}`, true},
		{"time_diff", m{"start": "2024-05-02", "end": "2024-05-01"}, `{"duration":"-24h0m0s","unit":"seconds","value":-86400}`, true},
		{"time_diff", m{"start": "2024-01-01", "end": "2024-01-15", "unit": "weeks"}, `~"value":2`, true},
	})
}

func TestJSONTools(t *testing.T) {
	runPure(t, []pureCase{
		{"json_parse", m{"text": `{"b":1,"a":[1,2.50]}`}, "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2.50\n  ]\n}", true},
		{"json_parse", m{"text": "{\n  \"a\": 1,\n  \"b\": \n}"}, "~line 4, column 1", false},
		{"json_parse", m{"text": `{"a":1} x`}, "~unexpected text after the JSON value at line 1, column 9", false},
		{"json_parse", m{"text": `{"a":`}, "~ends too early", false},
		{"json_parse", m{"text": "  "}, "~empty", false},
		{"json_get", m{"text": `{"items":[{"name":"a"},{"name":"b<c>"}]}`, "path": "items[1].name"}, `"b<c>"`, true},
		{"json_get", m{"text": `{"items":[{"name":"a"}]}`, "path": "$.items.0.name"}, `"a"`, true},
		{"json_get", m{"text": `{"items":[1,2,3]}`, "path": "items[-1]"}, `3`, true},
		{"json_get", m{"text": `{"a.b":{"0":"zero"}}`, "path": `["a.b"].0`}, `"zero"`, true},
		{"json_get", m{"text": `{"a]b":[0,{"c":"d"}]}`, "path": `[ 'a]b' ][1][ "c" ]`}, `"d"`, true},
		{"json_get", m{"text": `{"a":1}`, "path": `["a`}, "~invalid path", false},
		{"json_get", m{"text": `{"big":12345678901234567890}`, "path": "big"}, `12345678901234567890`, true},
		{"json_get", m{"text": `{"a":{"y":1,"x":2}}`, "path": ""}, "{\n  \"a\": {\n    \"x\": 2,\n    \"y\": 1\n  }\n}", true},
		{"json_get", m{"text": `{"a":1}`, "path": "b"}, `~key "b" not found at $`, false},
		{"json_get", m{"text": `{"a":[1]}`, "path": "a[3]"}, "~out of range at $.a", false},
		{"json_get", m{"text": `{"a":[1]}`, "path": "a.x"}, "~is an array", false},
		{"json_get", m{"text": `{"a":1}`, "path": "a.b"}, "~is a number", false},
		{"json_get", m{"text": `{"a":1}`, "path": "a[x]"}, "~not an index", false},
		{"json_stringify", m{"value": m{"b": []any{1, "x"}, "a": nil}, "indent": 0}, `{"a":null,"b":[1,"x"]}`, true},
		{"json_stringify", m{"value": "<tag>"}, `"<tag>"`, true},
		{"json_stringify", m{"value": m{"k": true}}, "{\n  \"k\": true\n}", true},
		{"json_validate", m{"text": `{"a":1}`}, `{"errors":[],"valid":true}`, true},
		{"json_validate", m{"text": `{"a":`}, `~"valid":false`, true},
		{"json_validate", m{"text": `{"a":"x"}`, "schema": `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a","b"]}`}, `~"valid":false`, true},
		{"json_validate", m{"text": `{"a":2}`, "schema": `{"type":"object","properties":{"a":{"type":"integer"}}}`}, `~"valid":true`, true},
		{"json_validate", m{"text": `{}`, "schema": `{"$ref":"file:///etc/passwd"}`}, "~not loaded", false},
		{"json_validate", m{"text": `{}`, "schema": `{"$ref":"https://example.com/s.json"}`}, "~not loaded", false},
		{"json_validate", m{"text": `{}`, "schema": `{"type":`}, "~schema: not valid JSON", false},
		{"json_validate", m{"text": `{"a":"x","c":[1,"y"]}`, "schema": `{"type":"object","properties":{"a":{"type":"integer"},"c":{"type":"array","items":{"type":"integer"}}},"required":["a","b"]}`},
			`{"errors":["at /: missing property 'b'","at /a: got string, want integer","at /c/1: got string, want integer"],"valid":false}`, true},
		{"json_validate", m{"text": `{}`, "schema": `{"type":"objekt","minLength":-1}`}, `~at /minLength: got -1, want at least 0; at /type: value must be one of`, false},
	})
}

func TestTextTools(t *testing.T) {
	runPure(t, []pureCase{
		{"text_length", m{"text": "héllo wörld\nline two\n"}, `{"bytes":23,"characters":21,"lines":2,"words":4}`, true},
		{"text_length", m{"text": ""}, `{"bytes":0,"characters":0,"lines":0,"words":0}`, true},
		{"text_upper", m{"text": "école ok"}, "ÉCOLE OK", true},
		{"text_lower", m{"text": "ÉCOLE"}, "école", true},
		{"text_trim", m{"text": "  \t hi \n"}, "hi", true},
		{"text_trim", m{"text": "xxhixx", "characters": "x", "side": "left"}, "hixx", true},
		{"text_trim", m{"text": "  hi  ", "side": "right"}, "  hi", true},
		{"text_replace", m{"text": "a-b-c", "old": "-", "new": "+"}, "a+b+c", true},
		{"text_replace", m{"text": "a-b-c", "old": "-", "new": "", "count": 1}, "ab-c", true},
		{"text_split", m{"text": "a,b,,c", "separator": ","}, `{"count":4,"parts":["a","b","","c"]}`, true},
		{"text_split", m{"text": "l1\nl2"}, `{"count":2,"parts":["l1","l2"]}`, true},
		{"text_split", m{"text": "a b c", "separator": " ", "limit": 2}, `{"count":2,"parts":["a","b c"]}`, true},
		{"text_split", m{"text": "hé", "separator": ""}, `{"count":2,"parts":["h","é"]}`, true},
		{"text_join", m{"parts": []any{"a", "b"}, "separator": ", "}, "a, b", true},
		{"text_join", m{"parts": []any{"a", "b"}}, "a\nb", true},
		{"text_join", m{"parts": []any{}}, "", true},
		{"text_contains", m{"text": "HELLO héllo Hello", "substring": "hello", "ignore_case": true}, `{"contains":true,"count":2,"index":0}`, true},
		{"text_contains", m{"text": "ééX", "substring": "X"}, `{"contains":true,"count":1,"index":2}`, true},
		{"text_contains", m{"text": "abc", "substring": "z"}, `{"contains":false,"count":0,"index":-1}`, true},
	})
}

func TestHashTools(t *testing.T) {
	runPure(t, []pureCase{
		{"hash_sha256", m{"text": "abc"}, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", true},
		{"hash_sha256", m{"text": "abc", "encoding": "base64"}, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=", true},
		{"hash_sha1", m{"text": "abc"}, "a9993e364706816aba3e25717850c26c9cd0d89d", true},
		{"hash_md5", m{"text": "Hello Nexa"}, "~", true},
		{"hash_md5", m{"text": ""}, "d41d8cd98f00b204e9800998ecf8427e", true},
		{"base64_encode", m{"text": "héllo?>"}, "aMOpbGxvPz4=", true},
		{"base64_encode", m{"text": "héllo?>", "url_safe": true}, "aMOpbGxvPz4", true},
		{"base64_decode", m{"text": "aMOpbGxvPz4="}, "héllo?>", true},
		{"base64_decode", m{"text": "aMOpbGxv\nPz4"}, "héllo?>", true},
		{"base64_decode", m{"text": "aMOpbGxvPz4"}, "héllo?>", true},
		{"base64_decode", m{"text": "//8="}, "~in hex: ffff", false},
		{"base64_decode", m{"text": "!!!"}, "~not valid base64", false},
		{"hex_encode", m{"text": "hi"}, "6869", true},
		{"hex_decode", m{"text": "0x68 69"}, "hi", true},
		{"hex_decode", m{"text": "6"}, "~not valid hex", false},
	})
}

func TestMathTools(t *testing.T) {
	runPure(t, []pureCase{
		{"math_calc", m{"expression": "(10 + 5) * 2"}, "30", true},
		{"math_calc", m{"expression": "-2^2"}, "-4", true},
		{"math_calc", m{"expression": "2^3^2"}, "512", true},
		{"math_calc", m{"expression": "2**10 - 1_000"}, "24", true},
		{"math_calc", m{"expression": "7 % 3 + 10 / 4"}, "3.5", true},
		{"math_calc", m{"expression": "0.1 + 0.2"}, "0.30000000000000004", true},
		{"math_calc", m{"expression": "round(2.675, 2)"}, "2.68", true},
		{"math_calc", m{"expression": "round(1.005, 2)"}, "1.01", true},
		{"math_calc", m{"expression": "round(-2.5)"}, "-3", true},
		{"math_calc", m{"expression": "round(1234.5, -2)"}, "1200", true},
		{"math_calc", m{"expression": "sqrt(16) + abs(-3) + max(1, 9, 4) + min(2, -1)"}, "15", true},
		{"math_calc", m{"expression": "log(8, 2) + ln(e) + log10(1000)"}, "7", true},
		{"math_calc", m{"expression": "floor(pi * 100) / 100"}, "3.14", true},
		{"math_calc", m{"expression": "1e3 * 2.5E-1"}, "250", true},
		{"math_calc", m{"expression": "2^100"}, "1.2676506002282294e+30", true},
		{"math_calc", m{"expression": "1/3"}, "0.3333333333333333", true},
		{"math_calc", m{"expression": "1 / (2 - 2)"}, "~division by zero at character 3", false},
		{"math_calc", m{"expression": "sqrt(-1)"}, "~negative", false},
		{"math_calc", m{"expression": "10^400"}, "~not a finite number", false},
		{"math_calc", m{"expression": "2 +"}, "~ends too early", false},
		{"math_calc", m{"expression": "(1 + 2"}, "~missing )", false},
		{"math_calc", m{"expression": "1 2"}, "~unexpected", false},
		{"math_calc", m{"expression": "__import__('os').system('id')"}, "~unknown function", false},
		{"math_calc", m{"expression": "x + 1"}, `~unknown name "x"`, false},
		{"math_calc", m{"expression": "pow(2)"}, "~takes 2 argument(s), got 1", false},
		{"math_calc", m{"expression": strings.Repeat("(", 3000) + "1" + strings.Repeat(")", 3000)}, "~nested too deeply", false},
		{"math_calc", m{"expression": strings.Repeat("-", 5000) + "1"}, "~nested too deeply", false},
		{"math_random", m{"min": 5, "max": 5}, "5", true},
		{"math_random", m{"min": 5, "max": 4}, "~smaller", false},
	})
	ro := runOpts{}
	for i := 0; i < 50; i++ {
		v, err := strconv.Atoi(mustRun(t, ro, "math_random", m{"min": -3, "max": 3}, true))
		if err != nil || v < -3 || v > 3 {
			t.Fatal(v, err)
		}
	}
	if _, err := strconv.ParseInt(mustRun(t, ro, "math_random", m{"min": -9223372036854775808, "max": 9223372036854775807}, true), 10, 64); err != nil {
		t.Fatal(err)
	}
}

func TestRegexTools(t *testing.T) {
	runPure(t, []pureCase{
		{"regex_match", m{"pattern": `(?P<user>\w+)@(\w+)\.com`, "text": "Email: test@example.com"}, `{"matched":true,"match":"test@example.com","index":7,"groups":["test","example"],"named":{"user":"test"}}`, true},
		{"regex_match", m{"pattern": `héllo`, "text": "ÉÉ HÉLLO", "flags": "i"}, `~"index":3`, true},
		{"regex_match", m{"pattern": `a(x)?b`, "text": "ab"}, `{"matched":true,"match":"ab","index":0,"groups":[null]}`, true},
		{"regex_match", m{"pattern": `z`, "text": "abc"}, `{"matched":false}`, true},
		{"regex_match", m{"pattern": `(a`, "text": "abc"}, "~invalid pattern", false},
		{"regex_match", m{"pattern": `(a)\1`, "text": "aa"}, "~no backreferences", false},
		{"regex_match", m{"pattern": `^b$`, "text": "a\nb", "flags": "m"}, `~"matched":true`, true},
		{"regex_find_all", m{"pattern": `\d+`, "text": "a1 b22 c333"}, `{"count":3,"matches":[{"match":"1","index":1,"groups":[]},{"match":"22","index":4,"groups":[]},{"match":"333","index":8,"groups":[]}],"truncated":false}`, true},
		{"regex_find_all", m{"pattern": `\d`, "text": "12345", "limit": 2}, `~"count":2`, true},
		{"regex_find_all", m{"pattern": `\d`, "text": "12345", "limit": 2}, `~"truncated":true`, true},
		{"regex_replace", m{"pattern": `(\w+)@(\w+)`, "text": "me@host", "replacement": "$2 at ${1}"}, "host at me", true},
		{"regex_replace", m{"pattern": `(\w+)@(\w+)`, "text": "me@host", "replacement": `\2/\1`}, "host/me", true},
		{"regex_replace", m{"pattern": `a`, "text": "banana", "replacement": "$$"}, "b$n$n$", true},
		{"regex_replace", m{"pattern": `a`, "text": "banana", "replacement": "$1", "literal": true}, "b$1n$1n$1", true},
		{"regex_replace", m{"pattern": `A`, "text": "banana", "replacement": "o", "flags": "i"}, "bonono", true},
	})
}

func FuzzEvalExpr(f *testing.F) {
	for _, s := range []string{"(10 + 5) * 2", "-2^2", "round(2.675, 2)", "max(1,2,3)", "1e308*10", "((((1))))", "log(0)", "2**-1", ".5e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxExprLen {
			return
		}
		_, _ = evalExpr(s)
	})
}

func FuzzStrptime(f *testing.F) {
	f.Add("2024-05-01 10:00", "%Y-%m-%d %H:%M")
	f.Add("Wed, 1 May 24 2:30 PM +0100", "%a, %d %b %y %I:%M %p %z")
	f.Add("1714557600", "%s")
	f.Add("x", "%")
	f.Fuzz(func(t *testing.T, text, format string) {
		_, _ = strptime(text, format, time.UTC)
		_, _ = parseTimeInput(text, time.UTC)
		_, _ = parseDuration(text)
		_, _ = parseJSONPath(text)
	})
}
