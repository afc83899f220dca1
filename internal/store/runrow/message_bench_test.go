package runrow

import (
	"encoding/json"
	"fmt"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/nexa-run/nexa/internal/state"
)

// resumeBodies are the 4,000 message bodies of a 2,000-round run of one
// tool call per reply, as a resume decodes them.
func resumeBodies(b *testing.B) [][]byte {
	var out [][]byte
	for i := range 2000 {
		id := fmt.Sprintf("call_%d", i+1)
		for _, m := range []state.Message{
			{Seq: 2 * i, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: id, Name: "add", Arguments: fmt.Sprintf(`{"a":%d,"b":1}`, i)}}},
			{Seq: 2*i + 1, Role: state.RoleTool, Content: fmt.Sprint(i + 1), ToolCallID: id, Name: "add"},
		} {
			body, err := json.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, body)
		}
	}
	return out
}

// BenchmarkDecodeResumeMessages is the decoding of a resume's messages
// by Message (the quick path) against the general decoder it falls back
// to.
func BenchmarkDecodeResumeMessages(b *testing.B) {
	bodies := resumeBodies(b)
	b.Run("Message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, body := range bodies {
				if _, err := Message(i, body); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, body := range bodies {
				var m state.Message
				if err := jsonv2.Unmarshal(body, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
