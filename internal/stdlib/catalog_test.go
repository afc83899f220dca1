package stdlib

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"
)

// handwritten is one tool of testdata/catalog-handwritten.json: the
// catalogue as it was typed by hand in Go before std.nx, captured once
// through All() and never regenerated.
type handwritten struct {
	Name        string          `json:"name"`
	Namespace   string          `json:"namespace"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Returns     string          `json:"returns"`
	Risk        string          `json:"risk"`
	Timeout     int             `json:"timeout"`
	Idempotent  bool            `json:"idempotent"`
}

// The catalogue generated from std.nx says exactly what the hand-typed one
// said: the same tools in the same order, every field equal, every schema
// keyword of every parameter equal, and the schemas the same bytes once
// compacted (which is what the program hash covers), so no program that
// uses a built-in tool changes hash and no stored run stops resuming.
func TestGeneratedCatalogEqualsHandwritten(t *testing.T) {
	data, err := os.ReadFile("testdata/catalog-handwritten.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []handwritten
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	got := All()
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		return out
	}
	gotNames := names(len(got), func(i int) string { return got[i].Name })
	wantNames := names(len(want), func(i int) string { return want[i].Name })
	if !slices.Equal(gotNames, wantNames) {
		t.Fatalf("tools differ:\n got %v\nwant %v", gotNames, wantNames)
	}
	for i, w := range want {
		g := got[i]
		t.Run(w.Name, func(t *testing.T) {
			for _, f := range []struct {
				field     string
				got, want any
			}{
				{"namespace", g.Namespace, w.Namespace},
				{"description", g.Description, w.Description},
				{"returns", g.Returns, w.Returns},
				{"risk", g.Risk, w.Risk},
				{"timeout", g.Timeout, w.Timeout},
				{"idempotent", g.Idempotent, w.Idempotent},
			} {
				if f.got != f.want {
					t.Errorf("%s: got %#v, want %#v", f.field, f.got, f.want)
				}
			}
			for _, d := range schemaDiff("", decodeSchema(t, g.Parameters), decodeSchema(t, w.Parameters)) {
				t.Errorf("parameters%s", d)
			}
			var gc, wc bytes.Buffer
			if err := json.Compact(&gc, g.Parameters); err != nil {
				t.Fatal(err)
			}
			if err := json.Compact(&wc, w.Parameters); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gc.Bytes(), wc.Bytes()) {
				t.Errorf("compact schema bytes differ (key order?):\n got %s\nwant %s", gc.Bytes(), wc.Bytes())
			}
		})
	}
}

func decodeSchema(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	return v
}

// schemaDiff lists, one line each, every place where two decoded JSON values
// differ, named by its path (`.properties.offset.minimum: got 1, want 0`).
func schemaDiff(path string, got, want any) []string {
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		var out []string
		keys := slices.Sorted(maps.Keys(wm))
		for k := range gm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			gv, inGot := gm[k]
			wv, inWant := wm[k]
			switch {
			case !inGot:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %v", path, k, wv))
			case !inWant:
				out = append(out, fmt.Sprintf("%s.%s: got %v, want no such keyword", path, k, gv))
			default:
				out = append(out, schemaDiff(path+"."+k, gv, wv)...)
			}
		}
		return out
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
	}
	return nil
}

// The index is built on first use, not before main; this is what that first
// use costs.
func BenchmarkBuildIndex(b *testing.B) {
	for b.Loop() {
		buildIndex()
	}
}
