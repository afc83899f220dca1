package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// rule is one checked [[rule]] of a policy.
type rule struct {
	name     string
	line     int
	tools    []pattern
	risks    []string // nil: any risk
	decision Decision
	reason   string
	conds    []*cond // args first, then pointers, each in file order
}

// pattern is a compiled glob with the text it was written as.
type pattern struct {
	src string
	re  *regexp.Regexp
}

func (r *rule) matchTool(tool string) (string, bool) {
	for _, t := range r.tools {
		if t.re.MatchString(tool) {
			if !hasGlobMeta(t.src) {
				return fmt.Sprintf("tool is %q", t.src), true
			}
			return fmt.Sprintf("tool matches %q", t.src), true
		}
	}
	return "", false
}

func (r *rule) matchRisk(risk string) (string, bool) {
	if r.risks == nil {
		return "", true
	}
	for _, k := range r.risks {
		if k == risk {
			if len(r.risks) == 1 {
				return fmt.Sprintf("risk is %s", risk), true
			}
			return fmt.Sprintf("risk %s is one of %s", risk, strings.Join(r.risks, ", ")), true
		}
	}
	return "", false
}

// cond is one condition on an argument: every test it has must hold.
type cond struct {
	label string   // how Why names it: "argument env", "/spec/replicas"
	arg   string   // the top-level argument, when ptr is nil
	ptr   []string // the unescaped reference tokens of a JSON Pointer
	isPtr bool

	equals *scalar
	in     []scalar
	glob   *pattern
	regex  *pattern
	min    *decimal
	minSrc string
	max    *decimal
	maxSrc string
}

// lookup finds the value the condition is about in the decoded arguments.
func (c *cond) lookup(args any) (any, bool) {
	if !c.isPtr {
		obj, ok := args.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := obj[c.arg]
		return v, ok
	}
	cur := args
	for _, tok := range c.ptr {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// arrayIndex reads an RFC 6901 array index: digits without a leading zero.
// "-" (the element after the last) names nothing that exists.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for _, r := range tok {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(tok)
	return i, err == nil
}

// match reports whether the condition holds, and says so in words that
// quote only the policy.
func (c *cond) match(args any) (string, bool) {
	v, ok := c.lookup(args)
	if !ok {
		return "", false
	}
	var parts []string
	if c.equals != nil {
		if !c.equals.equal(v) {
			return "", false
		}
		parts = append(parts, "is "+c.equals.String())
	}
	if c.in != nil {
		found := false
		for _, s := range c.in {
			if s.equal(v) {
				found = true
				break
			}
		}
		if !found {
			return "", false
		}
		parts = append(parts, "is one of "+scalarList(c.in))
	}
	if c.glob != nil {
		s, ok := v.(string)
		if !ok || !c.glob.re.MatchString(s) {
			return "", false
		}
		parts = append(parts, fmt.Sprintf("matches glob %q", c.glob.src))
	}
	if c.regex != nil {
		s, ok := v.(string)
		if !ok || !c.regex.re.MatchString(s) {
			return "", false
		}
		parts = append(parts, fmt.Sprintf("matches regex %q", c.regex.src))
	}
	if c.min != nil || c.max != nil {
		n, ok := v.(json.Number)
		if !ok {
			return "", false
		}
		d, ok := parseDecimal(string(n))
		if !ok {
			return "", false
		}
		if c.min != nil && d.cmp(*c.min) < 0 {
			return "", false
		}
		if c.max != nil && d.cmp(*c.max) > 0 {
			return "", false
		}
		switch {
		case c.min != nil && c.max != nil:
			parts = append(parts, fmt.Sprintf("is within [%s, %s]", c.minSrc, c.maxSrc))
		case c.min != nil:
			parts = append(parts, "is at least "+c.minSrc)
		default:
			parts = append(parts, "is at most "+c.maxSrc)
		}
	}
	return c.label + " " + strings.Join(parts, " and "), true
}

// scalarKind is the type of a value a condition compares with.
type scalarKind int

const (
	kindString scalarKind = iota
	kindNumber
	kindBool
)

// scalar is a string, number or boolean written in the policy. A string
// never equals a number, nor "true" a boolean.
type scalar struct {
	kind scalarKind
	s    string  // kindString: the text; kindNumber: as written, for Why
	n    decimal // kindNumber
	b    bool    // kindBool
}

func (s scalar) equal(v any) bool {
	switch s.kind {
	case kindString:
		t, ok := v.(string)
		return ok && t == s.s
	case kindNumber:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		d, ok := parseDecimal(string(n))
		return ok && d.cmp(s.n) == 0
	default:
		b, ok := v.(bool)
		return ok && b == s.b
	}
}

// String is the scalar as a policy writes it, for Why.
func (s scalar) String() string {
	switch s.kind {
	case kindString:
		return strconv.Quote(s.s)
	case kindNumber:
		return s.s
	default:
		return strconv.FormatBool(s.b)
	}
}

func scalarList(list []scalar) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// decimal is an exact decimal number, 0.digits × 10^exp, so that numbers
// compare exactly whatever their size or spelling (3, 3.0, 3e0, 0.3e1)
// without arithmetic on huge values a call could send (1e999999999).
type decimal struct {
	neg    bool
	digits string // no leading or trailing zeros; "" is zero
	exp    int
}

// maxExp bounds exponents; larger ones saturate, which keeps their order
// (the digits of a number in a call are bounded by its size).
const maxExp = 1 << 40

// parseDecimal reads a JSON number (also what strconv prints for a float).
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	mant, expPart, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expPart, hasExp = s[:i], s[i+1:], true
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" && frac == "" {
		return decimal{}, false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return decimal{}, false
			}
		}
	}
	exp := 0
	if hasExp {
		neg := false
		if expPart != "" && (expPart[0] == '+' || expPart[0] == '-') {
			neg, expPart = expPart[0] == '-', expPart[1:]
		}
		if expPart == "" {
			return decimal{}, false
		}
		for i := 0; i < len(expPart); i++ {
			c := expPart[i]
			if c < '0' || c > '9' {
				return decimal{}, false
			}
			if exp < maxExp {
				exp = exp*10 + int(c-'0')
			}
		}
		exp = min(exp, maxExp)
		if neg {
			exp = -exp
		}
	}
	all := intPart + frac
	lead := 0
	for lead < len(all) && all[lead] == '0' {
		lead++
	}
	digits := strings.TrimRight(all[lead:], "0")
	if digits == "" {
		return decimal{}, true // zero, whatever its sign
	}
	d.digits = digits
	d.exp = exp + len(intPart) - lead
	return d, true
}

// cmp compares two decimals: -1, 0 or +1.
func (a decimal) cmp(b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	m := a.cmpAbs(b)
	if sa < 0 {
		return -m
	}
	return m
}

func (a decimal) sign() int {
	switch {
	case a.digits == "":
		return 0
	case a.neg:
		return -1
	default:
		return 1
	}
}

func (a decimal) cmpAbs(b decimal) int {
	if a.exp != b.exp {
		if a.exp < b.exp {
			return -1
		}
		return 1
	}
	// same exponent: the digit strings compare as fractions
	n := max(len(a.digits), len(b.digits))
	for i := 0; i < n; i++ {
		ca, cb := byte('0'), byte('0')
		if i < len(a.digits) {
			ca = a.digits[i]
		}
		if i < len(b.digits) {
			cb = b.digits[i]
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return 0
}

// errDuplicateName is an argument object that names a member twice: tools
// and rules could read different values from it.
var errDuplicateName = errors.New("a name appears twice in one object")

// decodeArgs reads the call's arguments: one JSON object, numbers kept as
// written, no name twice in one object. Empty arguments are {}.
func decodeArgs(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the arguments object")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("the arguments are not a JSON object")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("the arguments end early")
		}
		return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
				}
				k, _ := kt.(string)
				if _, dup := obj[k]; dup {
					return nil, fmt.Errorf("%w (%q)", errDuplicateName, k)
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				obj[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
			}
			return arr, nil
		}
		return nil, errors.New("the arguments are not valid JSON")
	default:
		return tok, nil // string, json.Number, bool or nil
	}
}

// hasGlobMeta reports whether a glob has any special character, so that a
// plain name reads as "is" rather than "matches".
func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// compileGlob turns a glob into an anchored regular expression. The whole
// value must match: * is any run of characters (also / and .), ? is one
// character, [abc], [a-z] and [!abc] (or [^abc]) are classes, and \ makes
// the next character plain.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 >= len(rs) {
				return nil, errors.New(`it ends with a lone \`)
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			j := i + 1
			var cls strings.Builder
			cls.WriteByte('[')
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				cls.WriteByte('^')
				j++
			}
			start := j
			closed := false
			for ; j < len(rs); j++ {
				c := rs[j]
				if c == ']' && j > start {
					closed = true
					break
				}
				switch {
				case c == '\\':
					if j+1 >= len(rs) {
						return nil, errors.New(`it ends with a lone \`)
					}
					j++
					cls.WriteString(regexp.QuoteMeta(string(rs[j])))
				case c == '-' && j > start && j+1 < len(rs) && rs[j+1] != ']':
					if rs[j-1] > rs[j+1] {
						return nil, fmt.Errorf("the range %c-%c in [...] goes backwards", rs[j-1], rs[j+1])
					}
					cls.WriteByte('-')
				default:
					cls.WriteString(regexp.QuoteMeta(string(c)))
				}
			}
			if !closed {
				return nil, errors.New("a [ is never closed by ]")
			}
			cls.WriteByte(']')
			b.WriteString(cls.String())
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

// compileRegex anchors a Go (RE2) regular expression at both ends: the
// whole value must match, so "staging" does not match "not-staging".
func compileRegex(src string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(src); err != nil {
		return nil, regexError(err)
	}
	return regexp.Compile(`^(?:` + src + `)$`)
}

// regexError makes a regexp error read as a sentence.
func regexError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	return errors.New(msg)
}

// parsePointer splits an RFC 6901 JSON Pointer into its reference tokens.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New(`the empty pointer names the whole arguments object; name a member, such as "/env"`)
	}
	if p[0] != '/' {
		return nil, errors.New(`a JSON Pointer starts with "/", such as "/spec/replicas"`)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 >= len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, errors.New(`~ must be followed by 0 (for ~) or 1 (for /)`)
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}
