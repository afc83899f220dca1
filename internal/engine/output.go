package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexa-run/nexa/internal/state"
)

// correctionName marks the user messages the runtime adds to ask for a
// corrected structured answer, so they can be counted after a resume.
const correctionName = "nexa_correction"

// defaultRetry is the number of retries when an agent sets none.
const defaultRetry = 3

func (d *driver) retryLimit() int {
	if d.r.agent.Retry >= 0 {
		return d.r.agent.Retry
	}
	return defaultRetry
}

// checkAnswer returns what is wrong with a final answer of an agent that
// implements a protocol, or "" when it is acceptable or no corrections are
// left (then complete reports the failure).
func (d *driver) checkAnswer(content string) string {
	if d.r.schemas.output == nil {
		return ""
	}
	if _, err := d.parseStructured(content); err == nil {
		return ""
	} else {
		used := 0
		for _, m := range d.st.Messages {
			if m.Role == state.RoleUser && m.Name == correctionName {
				used++
			}
		}
		if used >= d.retryLimit() {
			return ""
		}
		return fmt.Sprintf("Your answer must be a single JSON object matching protocol %s, but %v. Reply again with only the corrected JSON object.", d.r.agent.Implements, err)
	}
}

// correct saves the rejected answer and a message telling the model what to
// fix, then continues the loop.
func (d *driver) correct(ctx context.Context, msg state.Message, fix string, delta state.Delta) (step, error) {
	d.st.Messages = append(d.st.Messages, msg)
	fixMsg := state.Message{Seq: len(d.st.Messages), Role: state.RoleUser, Name: correctionName, Content: fix}
	d.st.Messages = append(d.st.Messages, fixMsg)
	delta.Messages = append(delta.Messages, msg, fixMsg)
	if err := d.save(ctx, delta); err != nil {
		return stepStop, err
	}
	return stepContinue, nil
}

// parseStructured decodes an answer as a JSON object (tolerating a Markdown
// code fence around it) and validates it against the protocol.
func (d *driver) parseStructured(content string) (json.RawMessage, error) {
	text := strings.TrimSpace(content)
	if strings.HasPrefix(text, "```") {
		text = strings.TrimPrefix(text, "```json")
		text = strings.TrimPrefix(text, "```")
		text = strings.TrimSuffix(strings.TrimSpace(text), "```")
		text = strings.TrimSpace(text)
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, fmt.Errorf("it is not valid JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("it is not a JSON object")
	}
	if err := d.r.schemas.validateOutput(v); err != nil {
		return nil, fmt.Errorf("it does not match the schema: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// finalOutput is the run's output: the text as a JSON string, or the
// validated object for an agent that implements a protocol.
func (d *driver) finalOutput(content string) (json.RawMessage, error) {
	if d.r.schemas.output != nil {
		out, err := d.parseStructured(content)
		if err != nil {
			return nil, fmt.Errorf("the final answer does not implement protocol %s after %d corrections: %v", d.r.agent.Implements, d.retryLimit(), err)
		}
		return out, nil
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	return b, nil
}
