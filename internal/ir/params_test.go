package ir

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestParametersSchema pins the generated schema byte for byte: it is what
// models read and what the program hash covers.
func TestParametersSchema(t *testing.T) {
	point := &Type{Kind: KindRecord, Fields: []Field{
		{Name: "x", Type: &Type{Kind: KindInteger}},
		{Name: "y", Type: &Type{Kind: KindNumber, Nullable: true}},
	}}
	params := []Param{
		{Name: "q", Type: &Type{Kind: KindString, Description: "ignored: the parameter's own wins"}, Description: "The <query>", Required: true},
		{Name: "n", Type: &Type{Kind: KindInteger}, Description: "Count", Default: json.RawMessage(`3`)},
		{Name: "tags", Type: &Type{Kind: KindArray, Nullable: true, Items: &Type{Kind: KindString}}, Description: "Tags"},
		{Name: "at", Type: point, Description: "Where", Required: true},
		{Name: "m", Type: &Type{Kind: KindMap, Values: &Type{Kind: KindAny}}, Description: "Map", Required: true},
		{Name: "either", Type: &Type{Kind: KindUnion, Alts: []*Type{{Kind: KindInteger}, {Kind: KindNull}}}, Description: "Either"},
		{Name: "any", Type: &Type{Kind: KindAny}, Description: "Anything", Required: true},
	}
	want := `{"type":"object","properties":{` +
		`"q":{"type":"string","description":"The <query>"},` +
		`"n":{"type":"integer","description":"Count","default":3},` +
		`"tags":{"type":["array","null"],"items":{"type":"string"},"description":"Tags"},` +
		`"at":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":["number","null"]}},"required":["x","y"],"additionalProperties":false,"description":"Where"},` +
		`"m":{"type":"object","additionalProperties":{},"description":"Map"},` +
		`"either":{"anyOf":[{"type":"integer"},{"type":"null"}],"description":"Either"},` +
		`"any":{"description":"Anything"}` +
		`},"required":["q","at","m","any"],"additionalProperties":false}`
	if got := string(ParametersSchema(params)); got != want {
		t.Errorf("ParametersSchema:\n got %s\nwant %s", got, want)
	}
	if got := string(ParametersSchema(nil)); got != `{"type":"object","properties":{},"required":[],"additionalProperties":false}` {
		t.Errorf("no parameters: %s", got)
	}
	// Reading the generated schema back gives the same names, order,
	// descriptions, defaults and required flags.
	back, err := ParamsFromSchema(ParametersSchema(params))
	if err != nil {
		t.Fatal(err)
	}
	for i := range params {
		params[i].Type = nil
	}
	if !reflect.DeepEqual(back, params) {
		t.Errorf("ParamsFromSchema(ParametersSchema(p)):\n got %+v\nwant %+v", back, params)
	}
}

func TestParamsFromSchema(t *testing.T) {
	got, err := ParamsFromSchema(json.RawMessage(`{"type":"object","properties":{
		"b": {"type":"string","description":"B"},
		"a": {"type":"integer","default": 7},
		"c": {"default": {"k": [1, 2]}}
	},"required":["b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{
		{Name: "b", Description: "B", Required: true},
		{Name: "a", Default: json.RawMessage(`7`)},
		{Name: "c", Default: json.RawMessage(`{"k":[1,2]}`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, empty := range []string{``, `{}`, `{"type":"object"}`, `{"properties":null}`} {
		if got, err := ParamsFromSchema(json.RawMessage(empty)); err != nil || got != nil {
			t.Errorf("%q: %v, %v", empty, got, err)
		}
	}
	for _, bad := range []string{`[1]`, `{"properties":[1]}`, `{"properties":{"a":1}}`, `{"properties":{`} {
		if _, err := ParamsFromSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFillDefaults(t *testing.T) {
	tool := &Tool{Params: []Param{
		{Name: "req", Required: true},
		{Name: "def", Default: json.RawMessage(`"x<y"`)},
		{Name: "opt"},
		{Name: "given", Default: json.RawMessage(`1`)},
	}}
	args := map[string]any{"given": "mine"}
	tool.FillDefaults(args)
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"def":"x\u003cy","given":"mine","opt":null}`; string(b) != want {
		t.Errorf("filled %s, want %s", b, want)
	}
}

func TestTypeJSONType(t *testing.T) {
	for typ, want := range map[*Type]string{
		{Kind: KindString}:                 "string",
		{Kind: KindString, Nullable: true}: "",
		{Kind: KindMap}:                    "object",
		{Kind: KindRecord}:                 "object",
		{Kind: KindArray}:                  "array",
		{Kind: KindUnion}:                  "",
		{Kind: KindAny}:                    "",
		{Kind: KindNull}:                   "null",
	} {
		if got := typ.JSONType(); got != want {
			t.Errorf("%+v: %q, want %q", typ, got, want)
		}
	}
}
