package engine

import (
	"encoding/json"
	"fmt"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/schemacheck"
)

// maxProblems is how many schema problems a model is told about at once;
// more are summarised as "and N more".
const maxProblems = 5

// schemaSet holds compiled validators for the exposed tools' arguments and
// the agent's output protocol.
type schemaSet struct {
	tools  map[string]*schemacheck.Schema
	output *schemacheck.Schema
}

func newSchemaSet(tools map[string]*ir.Tool, output json.RawMessage) (*schemaSet, error) {
	s := &schemaSet{tools: map[string]*schemacheck.Schema{}}
	for name, t := range tools {
		compile := schemacheck.Compile
		if generatedSchema(t) {
			compile = schemacheck.CompileGenerated
		}
		sch, err := compile(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("schema of tool %s: %w", name, err)
		}
		s.tools[name] = sch
	}
	if len(output) > 0 {
		// A protocol's schema is generated from its fields.
		sch, err := schemacheck.CompileGenerated(output)
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		s.output = sch
	}
	return s, nil
}

// generatedSchema says whether nexa wrote the tool's schema itself (the
// compiler, from the tool's signature; stdlib, for a built-in tool), so
// that it needs no meta-schema check; an MCP server's schema does.
func generatedSchema(t *ir.Tool) bool {
	switch t.Body.Kind {
	case ir.BodyNative, ir.BodyPython, ir.BodySchema, ir.BodyBuiltin:
		return true
	}
	return false
}

// validateArgs checks decoded arguments (numbers as json.Number) against the
// tool's schema and explains every problem (up to maxProblems) in words a
// model can act on, each at its place in the arguments.
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

func explain(ps []schemacheck.Problem) error {
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("%s", schemacheck.Explain(ps, maxProblems))
}
