package runrow

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/nexa-run/nexa/internal/state"
)

// writtenMessages are messages as a run holds them, with the characters
// encoding/json escapes (HTML, line separators, controls, quotes inside
// arguments) and text beyond ASCII.
var writtenMessages = []state.Message{
	{Role: state.RoleUser, Content: "add 2 and 3"},
	{Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`}}},
	{Role: state.RoleAssistant, Content: "two at once", ToolCalls: []state.ToolCall{
		{ID: "c1", Name: "read", Arguments: `{"path":"a\\b.txt"}`}, {ID: "c2", Name: "wc", Arguments: "not json"}}},
	{Role: state.RoleTool, ToolCallID: "call_1", Name: "add", Content: "5"},
	{Role: state.RoleTool, ToolCallID: "c2", Name: "wc", Content: "bad <args> & \"quotes\"\n\ttab\u2028\u00e9\U0001F600", IsError: true},
	{Role: state.RoleAssistant, Content: "ctrl \x01\x1f and \\ backslash"},
	{Role: state.RoleAssistant, ToolCalls: []state.ToolCall{}},
	{Role: "custom", Content: ""},
	{},
}

// TestWrittenMessagesTakeTheQuickPath checks that every body the stores
// write decodes without the general decoder, and to the message written.
func TestWrittenMessagesTakeTheQuickPath(t *testing.T) {
	for i, want := range writtenMessages {
		want.Seq = i
		body, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got state.Message
		if !quickMessage(body, &got) {
			t.Errorf("body %s: quick path refused it", body)
			continue
		}
		got.Seq = i
		if len(want.ToolCalls) == 0 {
			want.ToolCalls = nil // omitempty: an empty list is not written
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body %s:\n got  %#v\n want %#v", body, got, want)
		}
		if m, err := Message(i, body); err != nil || !reflect.DeepEqual(m, want) {
			t.Errorf("Message(%s) = %#v, %v", body, m, err)
		}
	}
}

// TestQuickMessageRefusesWhatItDoesNotKnow checks bodies the quick path
// must leave to the general decoder, which then decides.
func TestQuickMessageRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, body := range []string{
		`{"role":"tool","role":"user"}`,         // a name twice
		`{"role":"tool","extra":1}`,             // an unknown name
		`{"seq":1.5}`,                           // not an integer
		`{"seq":01}`,                            // a leading zero
		`{"seq":99999999999999999999}`,          // beyond int64
		`{"content":"\ud83d\ude00"}`,            // an escaped surrogate pair
		`{"content":null}`,                      // null for a string
		`{"content":"a` + "\n" + `b"}`,          // a raw control character
		"{\"content\":\"\xff\"}",                // invalid UTF-8
		`{"tool_calls":[{"id":"a","id":"b"}]}`,  // a name twice in a call
		`{"tool_calls":[{"id":"a","index":0}]}`, // an unknown name in a call
		`{"is_error":1}`,                        // not a boolean
		`{"role":"tool"} x`,                     // text after the object
		`{"role":"tool",}`,                      // a trailing comma
		`[]`,                                    // not an object
		`{"content":"\x"}`,                      // an unknown escape
		`{"content":"abc`,                       // cut short
	} {
		var m state.Message
		if quickMessage([]byte(body), &m) {
			t.Errorf("quick path accepted %s as %#v", body, m)
		}
	}
	// The general decoder still reads what the quick path leaves to it.
	m, err := Message(3, []byte(`{"role":"tool","content":"\ud83d\ude00","extra":1}`))
	if err != nil || m.Content != "\U0001F600" || m.Seq != 3 || m.Role != state.RoleTool {
		t.Errorf("Message = %#v, %v", m, err)
	}
	if _, err := Message(3, []byte(`{"role":"tool","role":"user"}`)); err == nil {
		t.Error("a name given twice decoded without an error")
	}
}

// FuzzQuickMessage checks that whatever the quick path accepts, the
// general decoder accepts too and decodes to the same message.
func FuzzQuickMessage(f *testing.F) {
	for _, m := range writtenMessages {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	f.Add([]byte(`{"seq":-0,"tool_calls":null,"is_error":false}`))
	f.Add([]byte(` { "role" : "tool" , "content" : "\u00e9\/\b\f" } `))
	f.Fuzz(func(t *testing.T, body []byte) {
		var quick state.Message
		if !quickMessage(body, &quick) {
			return
		}
		var general state.Message
		if err := jsonv2.Unmarshal(body, &general); err != nil {
			t.Fatalf("quick path accepted %q, the general decoder refuses it: %v", body, err)
		}
		general.Seq = 0
		if !reflect.DeepEqual(quick, general) {
			t.Fatalf("%q:\n quick   %#v\n general %#v", body, quick, general)
		}
	})
}
