package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// eventTimeRE is the time of an event line: RFC 3339 in UTC with
// sub-second digits.
var eventTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$`)

// cmdJSONLines checks the stdout of nexa agent --output jsonl:
//
//	jsonlines [TYPE...]                 every line is a JSON object; all but the last are
//	                                    events (type, run_id, seq 1, 2, …, time), the last is
//	                                    the final object; with TYPEs, the events' types in order
//	jsonlines event TYPE PATH VALUE     the first event of TYPE has VALUE at PATH (as jsonis)
//	jsonlines final FILE                writes the last line as --output json prints it
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: jsonlines [TYPE...] | jsonlines event TYPE PATH VALUE | jsonlines final FILE")
	}
	events, finalLine := readJSONLines(ts)
	if len(args) > 0 && args[0] == "event" {
		if len(args) != 4 {
			ts.Fatalf("usage: jsonlines event TYPE PATH VALUE")
		}
		for _, ev := range events {
			if ev["type"] != args[1] {
				continue
			}
			v, ok := walkJSON(ev, args[2])
			if !ok {
				ts.Fatalf("the first %s event has no %s: %s", args[1], args[2], render(ev))
			}
			if got := render(v); got != args[3] {
				ts.Fatalf("%s event: %s = %s, want %s", args[1], args[2], got, args[3])
			}
			return
		}
		ts.Fatalf("no %s event on stdout", args[1])
	}
	if len(args) > 0 && args[0] == "final" {
		if len(args) != 2 {
			ts.Fatalf("usage: jsonlines final FILE")
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(finalLine), "", "  "); err != nil {
			ts.Fatalf("final line: %v", err)
		}
		buf.WriteByte('\n')
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), buf.Bytes(), 0o644))
		return
	}
	if len(args) == 0 {
		return
	}
	types := make([]string, len(events))
	for i, ev := range events {
		types[i] = ev["type"].(string)
	}
	if got, want := strings.Join(types, " "), strings.Join(args, " "); got != want {
		ts.Fatalf("event types:\n  got  %s\n  want %s", got, want)
	}
}

// readJSONLines parses stdout as JSON lines and checks the common fields of
// the events and that the last line is the final object.
func readJSONLines(ts *testscript.TestScript) (events []map[string]any, finalLine string) {
	var final map[string]any
	out := ts.ReadFile("stdout")
	if !strings.HasSuffix(out, "\n") {
		ts.Fatalf("stdout does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, line := range lines {
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(&v); err != nil || dec.More() {
			ts.Fatalf("line %d is not one JSON object (%v): %s", i+1, err, line)
		}
		if i == len(lines)-1 {
			if _, ok := v["type"]; ok {
				ts.Fatalf("the last line is an event, not the final object: %s", line)
			}
			want := []string{"run_id", "pending_calls", "error", "warnings"}
			if v["run_id"] != nil {
				want = append(want, "status", "usage")
			}
			for _, k := range want {
				if _, ok := v[k]; !ok {
					ts.Fatalf("the last line is not the final object: it has no %s: %s", k, line)
				}
			}
			final, finalLine = v, line
			break
		}
		typ, ok := v["type"].(string)
		if !ok || typ == "" {
			ts.Fatalf("line %d has no type: %s", i+1, line)
		}
		if seq, _ := v["seq"].(float64); seq != float64(i+1) {
			ts.Fatalf("line %d has seq %v, want %d", i+1, v["seq"], i+1)
		}
		if t, _ := v["time"].(string); !eventTimeRE.MatchString(t) {
			ts.Fatalf("line %d has time %q, want RFC 3339 in UTC with sub-second digits", i+1, v["time"])
		}
		if id, _ := v["run_id"].(string); !strings.HasPrefix(id, "run_") {
			ts.Fatalf("line %d has run_id %v", i+1, v["run_id"])
		}
		events = append(events, v)
	}
	for i, ev := range events {
		if final["run_id"] != nil && ev["run_id"] != final["run_id"] {
			ts.Fatalf("event %d is of run %v, the final object of %v", i+1, ev["run_id"], final["run_id"])
		}
	}
	return events, finalLine
}

// walkJSON follows a dotted path (keys and list indexes) into v.
func walkJSON(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[part]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}
