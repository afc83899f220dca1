package ir

import (
	"bytes"
	"encoding/json"
	"testing"
)

// An Object's keys are written as encoding/json writes a map's keys (HTML
// escaping off), whatever bytes they hold: the program hash depends on it.
func TestObjectKeysEncodeAsEncodingJSON(t *testing.T) {
	keys := []string{"", "type", "a b", "<a&b>", "q\"uote", `back\slash`, "tab\t", "é", "\u2028", "\xff", "\x7f"}
	for c := 0; c < 0x80; c++ {
		keys = append(keys, string(rune(c)))
	}
	for _, k := range keys {
		got, err := NewObject().Set(k, 1).MarshalJSON()
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]int{k: 1}); err != nil {
			t.Fatal(err)
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Errorf("key %q: got %s, want %s", k, got, w)
		}
	}
}
