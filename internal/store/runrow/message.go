package runrow

import (
	"strconv"
	"unicode/utf8"

	"github.com/nexa-run/nexa/internal/state"
)

// The fields of a message body, one bit each, so a repeated name (which
// the general decoder refuses) is noticed.
const (
	fieldSeq = 1 << iota
	fieldRole
	fieldContent
	fieldToolCalls
	fieldToolCallID
	fieldName
	fieldIsError
)

// quickMessage decodes a message body as the stores write it (encoding/json
// of state.Message: known names, each once, strings, integers, booleans)
// into m without reflection. It reports false for anything else,
// and the caller then decodes the body the general way; whatever it
// accepts decodes exactly as that would (FuzzQuickMessage). A resume
// decodes every message of its run, and the general decoder spent most of
// its time finding fields and allocating strings one by one.
func quickMessage(body []byte, m *state.Message) bool {
	p := parser{s: body}
	return p.object(func(name []byte) (bit int, ok bool) {
		switch string(name) {
		case "seq":
			return fieldSeq, p.integer()
		case "role":
			m.Role, ok = p.role()
			return fieldRole, ok
		case "content":
			m.Content, ok = p.str()
			return fieldContent, ok
		case "tool_calls":
			m.ToolCalls, ok = p.toolCalls()
			return fieldToolCalls, ok
		case "tool_call_id":
			m.ToolCallID, ok = p.str()
			return fieldToolCallID, ok
		case "name":
			m.Name, ok = p.str()
			return fieldName, ok
		case "is_error":
			m.IsError, ok = p.boolean()
			return fieldIsError, ok
		}
		return 0, false
	}) && p.end()
}

// object reads a JSON object. For each member, value is given its name,
// reads its value and gives the name's bit (0 for a name it does not
// know) and whether the value was read; a name given twice is refused, as
// the general decoder refuses it.
func (p *parser) object(value func(name []byte) (bit int, ok bool)) bool {
	if !p.consume('{') {
		return false
	}
	if p.consume('}') {
		return true
	}
	seen := 0
	for {
		name, named := p.name()
		if !named {
			return false
		}
		bit, ok := value(name)
		if bit == 0 || !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !p.consume(',') {
			return p.consume('}')
		}
	}
}

// role reads a string, giving the runtime's constant for the roles it
// writes, so that thousands of messages do not each keep a copy of one.
func (p *parser) role() (string, bool) {
	save := p.i
	if p.consume('"') {
		for _, k := range [...]string{state.RoleAssistant, state.RoleTool, state.RoleUser, state.RoleSystem} {
			if len(p.s)-p.i > len(k) && string(p.s[p.i:p.i+len(k)]) == k && p.s[p.i+len(k)] == '"' {
				p.i += len(k) + 1
				return k, true
			}
		}
	}
	p.i = save
	return p.str()
}

// toolCalls reads an array of {"id","name","arguments"} objects (each name
// at most once), or null.
func (p *parser) toolCalls() ([]state.ToolCall, bool) {
	if p.literal("null") {
		return nil, true
	}
	if !p.consume('[') {
		return nil, false
	}
	calls := []state.ToolCall{}
	if p.consume(']') {
		return calls, true
	}
	for {
		var c state.ToolCall
		read := p.object(func(name []byte) (bit int, ok bool) {
			switch string(name) {
			case "id":
				c.ID, ok = p.str()
				return 1, ok
			case "name":
				c.Name, ok = p.str()
				return 2, ok
			case "arguments":
				c.Arguments, ok = p.str()
				return 4, ok
			}
			return 0, false
		})
		if !read {
			return nil, false
		}
		calls = append(calls, c)
		if !p.consume(',') {
			return calls, p.consume(']')
		}
	}
}

// parser walks a JSON text held in s from i, refusing what it does not
// know rather than guessing.
type parser struct {
	s []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// consume skips white space and c, if c comes next.
func (p *parser) consume(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *parser) end() bool {
	p.space()
	return p.i == len(p.s)
}

func (p *parser) literal(word string) bool {
	p.space()
	if len(p.s)-p.i >= len(word) && string(p.s[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) boolean() (bool, bool) {
	if p.literal("true") {
		return true, true
	}
	return false, p.literal("false")
}

// integer skips a JSON integer that fits an int64: no fraction, no
// exponent, no leading zero.
func (p *parser) integer() bool {
	p.space()
	neg := p.i < len(p.s) && p.s[p.i] == '-'
	if neg {
		p.i++
	}
	digits := p.i
	var n uint64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		if n > (1<<63)/10 {
			return false
		}
		n = n*10 + uint64(p.s[p.i]-'0')
		p.i++
	}
	if p.i == digits || p.s[digits] == '0' && p.i-digits > 1 || n > 1<<63 || n == 1<<63 && !neg {
		return false
	}
	return p.i == len(p.s) || p.s[p.i] != '.' && p.s[p.i] != 'e' && p.s[p.i] != 'E'
}

// name reads an object member's name and its colon, without copying it;
// a name with an escape is refused (the stores write none).
func (p *parser) name() ([]byte, bool) {
	if !p.consume('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, p.consume(':')
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// str reads a string, with the escapes encoding/json writes (\", \\, \/, \b, \f, \n,
// \r, \t and \u of a character outside the surrogates). Invalid UTF-8,
// control characters and escaped surrogates are refused.
func (p *parser) str() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return string(v), utf8.Valid(v)
		case c == '\\':
			return p.unescape(start)
		case c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// unescape finishes a string from start whose first escape is at p.i.
func (p *parser) unescape(start int) (string, bool) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), utf8.Valid(b)
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if p.i+4 > len(p.s) {
				return "", false
			}
			r, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
			if err != nil || r >= 0xD800 && r <= 0xDFFF {
				return "", false
			}
			p.i += 4
			b = utf8.AppendRune(b, rune(r))
		default:
			return "", false
		}
	}
	return "", false
}
