package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// inputPage is a call waiting for input as the run page shows it: each
// request a form of simple fields when its schema allows (strings,
// numbers, booleans, enums at the top level), else a JSON box; a URL
// request shown as text with its domain, never as a link nexa follows.
type inputPage struct {
	engine.PendingInput
	Requests []inputRequestPage
	// Fields says that the call has one form request whose schema the
	// page renders as fields; otherwise the answer is JSON.
	Fields bool
	// URLOnly says every request is a URL: answered done or declined.
	URLOnly bool
}

type inputRequestPage struct {
	engine.PendingInputRequest
	Schema string // indented for reading
	Fields []formField
}

// formField is one top-level property of a form's schema.
type formField struct {
	Name, Title, Kind string // Kind: string, integer, number, boolean, enum
	Required          bool
	Options           []string
}

// simpleFields reads a form schema's top-level properties as fields, or
// reports false when any is richer than a page's field can say (an
// object, an array, a union), for which the page offers a JSON box.
func simpleFields(schema json.RawMessage) ([]formField, bool) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Type != "object" || len(s.Properties) == 0 {
		return nil, false
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []formField
	for _, n := range names {
		var p struct {
			Type  any    `json:"type"`
			Title string `json:"title"`
			Enum  []any  `json:"enum"`
		}
		if json.Unmarshal(s.Properties[n], &p) != nil {
			return nil, false
		}
		f := formField{Name: n, Title: p.Title, Required: req[n]}
		if f.Title == "" {
			f.Title = n
		}
		t, _ := p.Type.(string)
		switch {
		case len(p.Enum) > 0 && (t == "" || t == "string"):
			for _, v := range p.Enum {
				sv, ok := v.(string)
				if !ok {
					return nil, false
				}
				f.Options = append(f.Options, sv)
			}
			f.Kind = "enum"
		case t == "string" || t == "integer" || t == "number" || t == "boolean":
			f.Kind = t
		default:
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// inputPages builds the run page's input section.
func inputPages(ins []engine.PendingInput) []inputPage {
	var out []inputPage
	for _, in := range ins {
		p := inputPage{PendingInput: in, URLOnly: true}
		for _, r := range in.Requests {
			rp := inputRequestPage{PendingInputRequest: r}
			if r.Mode != state.InputURL {
				p.URLOnly = false
				rp.Schema = indentJSON(r.Schema)
				if fs, ok := simpleFields(r.Schema); ok && len(in.Requests) == 1 {
					rp.Fields, p.Fields = fs, true
				}
			}
			p.Requests = append(p.Requests, rp)
		}
		out = append(out, p)
	}
	return out
}

// answerFromForm turns a posted input form into the answer ApplyResponses
// takes: the action buttons (done, decline, cancel), the JSON box, or the
// fields of a simple form typed by its schema (an empty field is left
// out, so a required one is named by the check).
func answerFromForm(r *http.Request, in *state.InputRound) (string, error) {
	switch a := r.PostFormValue("action"); a {
	case "done", "decline", "cancel":
		return a, nil
	case "json":
		return r.PostFormValue("answer"), nil
	case "fields":
	default:
		return "", fmt.Errorf("say what to send: the form, done, or decline (nothing was recorded)")
	}
	if in == nil || len(in.Requests) != 1 {
		return "", fmt.Errorf("this call asks for more than one thing: answer it with JSON (nothing was recorded)")
	}
	fields, ok := simpleFields(in.Requests[0].Schema)
	if !ok {
		return "", fmt.Errorf("this form needs a JSON answer (nothing was recorded)")
	}
	content := map[string]any{}
	for _, f := range fields {
		v := strings.TrimSpace(r.PostFormValue("field." + f.Name))
		if v == "" {
			continue
		}
		switch f.Kind {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", fmt.Errorf("%s takes a whole number, not %q (nothing was recorded)", f.Title, v)
			}
			content[f.Name] = n
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return "", fmt.Errorf("%s takes a number, not %q (nothing was recorded)", f.Title, v)
			}
			content[f.Name] = n
		case "boolean":
			content[f.Name] = v == "true"
		default:
			content[f.Name] = r.PostFormValue("field." + f.Name)
		}
	}
	b, err := json.Marshal(content)
	return string(b), err
}

// respondForm records an answer posted from the run page.
func (s *Server) respondForm() func(http.ResponseWriter, *http.Request, *pageData) {
	return s.operatorForm("answered", func(r *http.Request) string {
		if a := r.PostFormValue("action"); a == "" {
			return "say what to send: the form, done, or decline (nothing was recorded)"
		}
		return ""
	}, func(r *http.Request, id string, rev int64, callID string) error {
		st, err := engine.Show(r.Context(), s.o.Store, id)
		if err != nil {
			return err
		}
		var in *state.InputRound
		if e := st.Entry(callID); e != nil {
			in = e.Input()
		}
		answer, err := answerFromForm(r, in)
		if err != nil {
			return &engine.Error{Code: engine.CodeInvalidResponse, Refusal: true, Message: err.Error()}
		}
		_, _, err = s.respond(r.Context(), id, rev, callID, answer)
		return err
	})
}
