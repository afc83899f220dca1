package policy

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/nexa-run/nexa/internal/lang"
)

// Error is one problem of a policy file, with its line when it is known.
type Error struct {
	File string
	Line int // 0 when unknown
	Msg  string
}

// Error reads "file:line: message", like a compiler's diagnostics.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Errors is every problem found in a policy file, in line order, so that
// one check shows them all. Load and Parse return it on failure.
type Errors []*Error

// Error puts one problem on each line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Load reads and checks a policy file. It reads at most MaxSize bytes, so a
// device or a huge file is refused at once; every problem is reported as
// Errors with file:line where the line is known.
func Load(path string) (*Policy, error) {
	fail := func(format string, args ...any) (*Policy, error) {
		return nil, Errors{{File: path, Msg: fmt.Sprintf(format, args...)}}
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail("the policy file does not exist")
		}
		return fail("cannot open the policy file: %v", unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return fail("cannot read the policy file: %v", unwrapPath(err))
	}
	if len(data) > MaxSize {
		return fail("the policy file is larger than %d bytes (1 MiB)", MaxSize)
	}
	p, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	p.path = path
	return p, nil
}

// unwrapPath drops the path from an *os.PathError, which the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse checks policy text; name is used in error messages.
func Parse(name string, data []byte) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("the policy is larger than %d bytes (1 MiB)", MaxSize)}}
	}
	if line, msg := checkShape(data); msg != "" {
		return nil, Errors{{File: name, Line: line, Msg: msg}}
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, Errors{{File: name, Line: pe.Position.Line, Msg: "not valid TOML: " + pe.Message}}
		}
		return nil, Errors{{File: name, Msg: "not valid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}}
	}
	c := &checker{file: name, lines: newLineIndex(string(data))}
	p := c.policy(doc)
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, c.errs
	}
	p.hash = hashOf(data)
	return p, nil
}

// Keys a policy may have; anything else is an error, so that a misspelt
// key cannot silently drop a condition.
var (
	topKeys  = []string{"allow_critical", "rule"}
	ruleKeys = []string{"name", "tool", "risk", "decision", "reason", "args", "pointers"}
	condKeys = []string{"equals", "in", "glob", "regex", "min", "max"}
	risks    = []string{"low", "medium", "high", "critical"}
)

// validRuleName reports whether s may name a rule: it is journaled as
// "policy:<name>" and shown in lists, so it stays one plain word of 1 to
// 64 letters, digits, '.', '_' or '-', starting with a letter or digit.
func validRuleName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i, c := range []byte(s) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// checker walks the decoded TOML, collecting every problem.
type checker struct {
	file  string
	lines *lineIndex
	errs  Errors
}

func (c *checker) errorf(line int, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// unknownKey reports a key that is not one of known, with a suggestion.
func (c *checker) unknownKey(line int, where, key string, known []string) {
	msg := fmt.Sprintf("unknown key %q %s", key, where)
	if s := lang.Closest(key, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else {
		msg += " (known: " + strings.Join(known, ", ") + ")"
	}
	c.errorf(line, "%s", msg)
}

func (c *checker) policy(doc map[string]any) *Policy {
	p := &Policy{}
	for _, k := range c.sortedKeys(doc, -1) {
		v := doc[k]
		line := c.lines.find(-1, k)
		switch k {
		case "allow_critical":
			b, ok := v.(bool)
			if !ok {
				c.errorf(line, "allow_critical must be true or false, found %s", describe(v))
				continue
			}
			p.allowCritical = b
		case "rule":
			tables, ok := tableList(v)
			if !ok {
				c.errorf(line, "rule must be a list of tables, written [[rule]], found %s", describe(v))
				continue
			}
			if len(tables) == 0 {
				c.errorf(line, "rule is an empty list; a policy needs at least one rule")
				continue
			}
			c.lines.setRules(len(tables))
			seen := map[string]int{}
			for i, t := range tables {
				r, ok := c.rule(i, t)
				if r.name != "" {
					if first, dup := seen[r.name]; dup {
						c.errorf(r.line, "duplicate rule name %q: the rule at line %d has it already", r.name, first)
						continue
					}
					seen[r.name] = r.line
				}
				if ok {
					p.rules = append(p.rules, r)
				}
			}
		default:
			if k == "rules" {
				c.errorf(line, "unknown key %q at the top level (write each rule as [[rule]])", k)
				continue
			}
			c.unknownKey(line, "at the top level", k, topKeys)
		}
	}
	if _, ok := doc["rule"]; !ok && len(c.errs) == 0 {
		c.errorf(0, "the policy has no rules; write each one as [[rule]] with name, tool and decision")
	}
	return p
}

// tableList accepts an array of tables, written [[rule]] or inline.
func tableList(v any) ([]map[string]any, bool) {
	switch t := v.(type) {
	case []map[string]any:
		return t, true
	case []any:
		out := make([]map[string]any, 0, len(t))
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out = append(out, m)
		}
		return out, true
	}
	return nil, false
}

// rule checks one [[rule]]; ok is false when it has errors.
func (c *checker) rule(i int, t map[string]any) (r *rule, ok bool) {
	r = &rule{line: c.lines.find(i)}
	where := fmt.Sprintf("in rule %d", i+1)
	before := len(c.errs)
	if name, ok := t["name"]; !ok {
		c.errorf(r.line, "rule %d has no name; every rule needs a unique name, which the journal records", i+1)
	} else if s, ok := name.(string); !ok {
		c.errorf(c.lines.find(i, "name"), "name of rule %d must be a string, found %s", i+1, describe(name))
	} else if !validRuleName(s) {
		c.errorf(c.lines.find(i, "name"), "name %q of rule %d must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", s, i+1)
	} else {
		r.name = s
		where = fmt.Sprintf("in rule %s", s)
	}
	for _, k := range c.sortedKeys(t, i) {
		v := t[k]
		line := c.lines.find(i, k)
		switch k {
		case "name":
		case "tool":
			r.tools = c.tools(line, where, v)
		case "risk":
			r.risks = c.risks(line, where, v)
		case "decision":
			s, _ := v.(string)
			switch Decision(s) {
			case Allow, Deny, Ask:
				r.decision = Decision(s)
			default:
				c.errorf(line, "decision %s must be \"allow\", \"deny\" or \"ask\", found %s", where, describe(v))
			}
		case "reason":
			s, ok := v.(string)
			if !ok {
				c.errorf(line, "reason %s must be a string, found %s", where, describe(v))
				continue
			}
			r.reason = strings.TrimSpace(s)
		case "args", "pointers":
			m, ok := v.(map[string]any)
			if !ok {
				c.errorf(line, "%s %s must be a table, written [rule.%s], found %s", k, where, k, describe(v))
				continue
			}
			r.conds = append(r.conds, c.conds(i, k, where, m)...)
		case "allow_critical":
			c.errorf(line, "allow_critical %s: it is a top-level setting of the whole policy; put it above the first [[rule]]", where)
		default:
			c.unknownKey(line, where, k, ruleKeys)
		}
	}
	if _, ok := t["tool"]; !ok {
		c.errorf(r.line, "rule %s has no tool; write tool = \"NAME\" (a glob such as \"*\" matches every tool)", ruleLabel(r, i))
	}
	if _, ok := t["decision"]; !ok {
		c.errorf(r.line, "rule %s has no decision; write decision = \"allow\", \"deny\" or \"ask\"", ruleLabel(r, i))
	}
	// a reason of the wrong type was reported above
	if _, isStr := t["reason"].(string); r.decision == Deny && r.reason == "" && (isStr || t["reason"] == nil) {
		c.errorf(r.line, "deny rule %s has no reason; the model is told why its call was refused, so write reason = \"...\"", ruleLabel(r, i))
	}
	if len(c.errs) > before || r.name == "" {
		return r, false
	}
	// args come before pointers, each in file order (sortedKeys did that
	// within a table; the stable sort keeps it across both)
	sort.SliceStable(r.conds, func(a, b int) bool { return !r.conds[a].isPtr && r.conds[b].isPtr })
	return r, true
}

func ruleLabel(r *rule, i int) string {
	if r.name != "" {
		return r.name
	}
	return strconv.Itoa(i + 1)
}

func (c *checker) tools(line int, where string, v any) []pattern {
	var list []string
	switch t := v.(type) {
	case string:
		list = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				c.errorf(line, "tool %s must be a name or glob, or a list of them, found %s in the list", where, describe(e))
				return nil
			}
			list = append(list, s)
		}
		if len(list) == 0 {
			c.errorf(line, "tool %s is an empty list, which matches no tool", where)
			return nil
		}
	default:
		c.errorf(line, "tool %s must be a name or glob, or a list of them, found %s", where, describe(v))
		return nil
	}
	var out []pattern
	for _, s := range list {
		if s == "" {
			c.errorf(line, "tool %s is empty; write a name, or \"*\" for every tool", where)
			continue
		}
		re, err := compileGlob(s)
		if err != nil {
			c.errorf(line, "tool %s: bad glob %q: %v", where, s, err)
			continue
		}
		out = append(out, pattern{src: s, re: re})
	}
	return out
}

func (c *checker) risks(line int, where string, v any) []string {
	var list []any
	switch t := v.(type) {
	case string:
		list = []any{t}
	case []any:
		list = t
	default:
		c.errorf(line, "risk %s must be a risk level or a list of them, found %s", where, describe(v))
		return nil
	}
	if len(list) == 0 {
		c.errorf(line, "risk %s is an empty list, which matches no tool", where)
		return nil
	}
	out := []string{}
	for _, e := range list {
		s, _ := e.(string)
		if !contains(risks, s) {
			c.errorf(line, "risk %s must be low, medium, high or critical, found %s", where, describe(e))
			return nil
		}
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// conds checks [rule.args] (top-level argument names) or [rule.pointers]
// (JSON Pointers into the arguments).
func (c *checker) conds(i int, section, where string, m map[string]any) []*cond {
	var out []*cond
	for _, k := range c.sortedKeys(m, i, section) {
		line := c.lines.find(i, section, k)
		cd := &cond{arg: k, label: "argument " + k}
		if section == "pointers" {
			toks, err := parsePointer(k)
			if err != nil {
				c.errorf(line, "pointer %q %s: %v", k, where, err)
				continue
			}
			cd.isPtr, cd.ptr, cd.label = true, toks, k
		} else if strings.HasPrefix(k, "/") {
			c.errorf(line, "argument %q %s starts with \"/\": JSON Pointers go in [rule.pointers]", k, where)
			continue
		}
		subject := fmt.Sprintf("%s %s", cd.label, where)
		if section == "pointers" {
			subject = fmt.Sprintf("pointer %s %s", k, where)
		}
		switch v := m[k].(type) {
		case map[string]any:
			if !c.condTable(i, section, k, subject, cd, v) {
				continue
			}
		case []any:
			c.errorf(line, "%s is a list; to match one of several values write { in = [...] }", subject)
			continue
		default:
			s, err := toScalar(v)
			if err != nil {
				c.errorf(line, "%s: %v", subject, err)
				continue
			}
			cd.equals = &s
		}
		out = append(out, cd)
	}
	return out
}

// patternTest checks the value v of a glob or regex test (op) of subject: a
// string that compile accepts; noun names its kind in the error. nil after
// reporting an error.
func (c *checker) patternTest(line int, op, subject, noun string, v any, compile func(string) (*regexp.Regexp, error)) *pattern {
	s, isStr := v.(string)
	if !isStr {
		c.errorf(line, "%s of %s must be a string, found %s", op, subject, describe(v))
		return nil
	}
	re, err := compile(s)
	if err != nil {
		c.errorf(line, "%s of %s: bad %s %q: %v", op, subject, noun, s, err)
		return nil
	}
	return &pattern{src: s, re: re}
}

// condTable checks a condition written as a table of tests.
func (c *checker) condTable(i int, section, key, subject string, cd *cond, t map[string]any) bool {
	line := c.lines.find(i, section, key)
	ok := true
	if len(t) == 0 {
		c.errorf(line, "%s is an empty condition; write a value, or a table with %s", subject, strings.Join(condKeys, ", "))
		return false
	}
	for _, op := range c.sortedKeys(t, i, section, key) {
		v := t[op]
		opLine := c.lines.find(i, section, key, op)
		switch op {
		case "equals":
			s, err := toScalar(v)
			if err != nil {
				c.errorf(opLine, "equals of %s: %v", subject, err)
				ok = false
				continue
			}
			cd.equals = &s
		case "in":
			list, isList := v.([]any)
			if !isList || len(list) == 0 {
				c.errorf(opLine, "in of %s must be a non-empty list of values, found %s", subject, describe(v))
				ok = false
				continue
			}
			cd.in = []scalar{}
			for _, e := range list {
				s, err := toScalar(e)
				if err != nil {
					c.errorf(opLine, "in of %s: %v", subject, err)
					ok = false
					break
				}
				cd.in = append(cd.in, s)
			}
		case "glob":
			if cd.glob = c.patternTest(opLine, op, subject, "glob", v, compileGlob); cd.glob == nil {
				ok = false
				continue
			}
		case "regex":
			if cd.regex = c.patternTest(opLine, op, subject, "regular expression", v, compileRegex); cd.regex == nil {
				ok = false
				continue
			}
		case "min", "max":
			s, err := toScalar(v)
			if err != nil || s.kind != kindNumber {
				c.errorf(opLine, "%s of %s must be a number, found %s", op, subject, describe(v))
				ok = false
				continue
			}
			d := s.n
			if op == "min" {
				cd.min, cd.minSrc = &d, s.s
			} else {
				cd.max, cd.maxSrc = &d, s.s
			}
		default:
			hint := ""
			if _, nested := v.(map[string]any); nested || lang.Closest(op, condKeys) == "" {
				hint = fmt.Sprintf("; to match the nested argument %s.%s, use [rule.pointers] %q", key, op, "/"+escapePointer(key)+"/"+escapePointer(op))
			}
			if section == "pointers" {
				hint = ""
			}
			msg := fmt.Sprintf("unknown test %q in the condition of %s", op, subject)
			if s := lang.Closest(op, condKeys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (known: " + strings.Join(condKeys, ", ") + ")"
			}
			c.errorf(opLine, "%s%s", msg, hint)
			ok = false
		}
	}
	if ok && cd.min != nil && cd.max != nil && cd.min.cmp(*cd.max) > 0 {
		c.errorf(line, "range of %s is empty: min %s is greater than max %s", subject, cd.minSrc, cd.maxSrc)
		ok = false
	}
	return ok
}

// escapePointer writes a name as one JSON Pointer reference token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// toScalar converts a TOML value a condition compares with.
func toScalar(v any) (scalar, error) {
	switch t := v.(type) {
	case string:
		return scalar{kind: kindString, s: t}, nil
	case bool:
		return scalar{kind: kindBool, b: t}, nil
	case int64:
		s := strconv.FormatInt(t, 10)
		d, _ := parseDecimal(s)
		return scalar{kind: kindNumber, s: s, n: d}, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return scalar{}, fmt.Errorf("%v is not a number a call can send", t)
		}
		s := strconv.FormatFloat(t, 'g', -1, 64)
		d, _ := parseDecimal(s)
		return scalar{kind: kindNumber, s: s, n: d}, nil
	}
	return scalar{}, fmt.Errorf("a value must be a string, number or boolean, found %s", describe(v))
}

// describe names a TOML value's type for messages.
func describe(v any) string {
	switch t := v.(type) {
	case string:
		return "the string " + strconv.Quote(t)
	case bool:
		return "the boolean " + strconv.FormatBool(t)
	case int64:
		return "the number " + strconv.FormatInt(t, 10)
	case float64:
		return "the number " + strconv.FormatFloat(t, 'g', -1, 64)
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date or time"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("a %T", v)
}

// sortedKeys lists a table's keys in file order (by the line the index
// finds, then by name), so that errors and conditions keep a stable order.
func (c *checker) sortedKeys(m map[string]any, rule int, path ...string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	lines := make(map[string]int, len(keys))
	for _, k := range keys {
		lines[k] = c.lines.find(rule, append(append([]string{}, path...), k)...)
	}
	sort.Slice(keys, func(a, b int) bool {
		if lines[keys[a]] != lines[keys[b]] {
			return lines[keys[a]] < lines[keys[b]]
		}
		return keys[a] < keys[b]
	})
	return keys
}
