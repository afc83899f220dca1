package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/nexa-run/nexa/internal/ir"
)

// schemaSet holds compiled validators for the exposed tools' arguments and
// the agent's output protocol.
type schemaSet struct {
	tools  map[string]*jsonschema.Schema
	output *jsonschema.Schema
}

func newSchemaSet(tools map[string]*ir.Tool, output json.RawMessage) (*schemaSet, error) {
	s := &schemaSet{tools: map[string]*jsonschema.Schema{}}
	for name, t := range tools {
		sch, err := compileSchema("tool:"+name, t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("schema of tool %s: %w", name, err)
		}
		s.tools[name] = sch
	}
	if len(output) > 0 {
		sch, err := compileSchema("output", output)
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		s.output = sch
	}
	return s, nil
}

func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// validateArgs checks decoded arguments (numbers as json.Number) against the
// tool's schema and explains the first problems in words a model can act on.
func (s *schemaSet) validateArgs(tool string, v any) error {
	sch := s.tools[tool]
	if sch == nil {
		return nil
	}
	return explain(sch.Validate(v))
}

// validateOutput checks a decoded final answer against the protocol schema.
func (s *schemaSet) validateOutput(v any) error {
	if s.output == nil {
		return nil
	}
	return explain(s.output.Validate(v))
}

// englishPrinter renders validation messages; the validator needs one.
var englishPrinter = message.NewPrinter(language.English)

func explain(err error) error {
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, strings.TrimSpace(e.ErrorKind.LocalizedString(englishPrinter))))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("and %d more", len(msgs)-5))
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
