package policy

import (
	"fmt"
	"sort"
	"strings"
)

// lineIndex finds the line a key was written on. The TOML library reports
// lines for syntax errors only, so the checker's own errors find theirs
// here: each line is read once for the keys it defines (a key = value, the
// keys of an inline table, a [table] header), and a key is looked up as the
// first definition after its parent's line within its rule's lines.
type lineIndex struct {
	keys    map[string][]int // key → 0-based lines that define it, ascending
	headers []int            // 0-based lines of each [[rule]] header
	n       int              // number of lines
	rules   []int            // 0-based first line of each rule, when known
}

func newLineIndex(text string) *lineIndex {
	x := &lineIndex{keys: map[string][]int{}}
	lines := strings.Split(text, "\n")
	x.n = len(lines)
	for i, l := range lines {
		for _, k := range lineKeys(l) {
			list := x.keys[k]
			if len(list) == 0 || list[len(list)-1] != i {
				x.keys[k] = append(list, i)
			}
		}
		if isRuleHeader(l) {
			x.headers = append(x.headers, i)
		}
	}
	return x
}

// setRules tells the index how many rules the document has; their lines
// are known when each was written as a [[rule]] header.
func (x *lineIndex) setRules(n int) {
	if len(x.headers) == n {
		x.rules = x.headers
	}
}

// find is the 1-based line of path inside rule (0-based; -1 for the top
// level), or, when the key cannot be found, of the closest parent found;
// 0 when nothing is known.
func (x *lineIndex) find(rule int, path ...string) int {
	from, to, line := 0, x.n, 0
	if rule >= 0 {
		if rule >= len(x.rules) {
			return 0
		}
		from, line = x.rules[rule], x.rules[rule]+1
		if rule+1 < len(x.rules) {
			to = x.rules[rule+1]
		}
	}
	for _, k := range path {
		list := x.keys[k]
		j := sort.SearchInts(list, from)
		if j >= len(list) || list[j] >= to {
			break
		}
		from, line = list[j], list[j]+1
	}
	return line
}

func isRuleHeader(l string) bool {
	t := strings.TrimSpace(stripComment(l))
	if !strings.HasPrefix(t, "[[") || !strings.HasSuffix(t, "]]") {
		return false
	}
	name := strings.TrimSpace(t[2 : len(t)-2])
	return name == "rule" || name == `"rule"` || name == `'rule'`
}

// eachUnquoted calls f with the index of every byte of s that is outside
// a TOML string ("basic", with backslash escapes, or 'literal'; the quotes
// count as inside), until f returns false. The line scanners below share
// it, so they agree on where strings are.
func eachUnquoted(s string, f func(i int) bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		default:
			if !f(i) {
				return
			}
		}
	}
}

// stripComment drops a # comment that is not inside a string.
func stripComment(l string) string {
	end := len(l)
	eachUnquoted(l, func(i int) bool {
		if l[i] == '#' {
			end = i
			return false
		}
		return true
	})
	return l[:end]
}

// lineKeys lists the keys a line defines: every part of a dotted key, the
// keys of inline tables, and the parts of a table header.
func lineKeys(l string) []string {
	t := strings.TrimSpace(stripComment(l))
	if strings.HasPrefix(t, "[") {
		t = strings.Trim(t, "[] \t")
		return splitDotted(t)
	}
	var out []string
	// a key starts the line, and follows each { or , outside strings
	starts := []int{0}
	eachUnquoted(t, func(i int) bool {
		if t[i] == '{' || t[i] == ',' {
			starts = append(starts, i+1)
		}
		return true
	})
	for _, s := range starts {
		rest := t[s:]
		eq := keyEnd(rest)
		if eq < 0 {
			continue
		}
		out = append(out, splitDotted(rest[:eq])...)
	}
	return out
}

// keyEnd is the index of the = ending a (possibly dotted, quoted) key at
// the start of s, or -1 when s does not start with a key.
func keyEnd(s string) int {
	end := -1
	eachUnquoted(s, func(i int) bool {
		switch c := s[i]; {
		case c == '=':
			if strings.TrimSpace(s[:i]) != "" {
				end = i
			}
			return false
		case c == ' ' || c == '\t' || c == '.' || c == '_' || c == '-' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
			return true
		default:
			return false
		}
	})
	return end
}

// splitDotted splits a.b."c.d" into its parts, unquoted.
func splitDotted(s string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		case c == ' ' || c == '\t':
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// Bounds on the shape of a policy, checked before the TOML library reads
// it: its time grows with the square of how deeply tables nest and of how
// many parts a dotted key has, and a real policy needs a handful of each.
const (
	maxNesting  = 16
	maxKeyParts = 32
)

// checkShape refuses text nested deeper than maxNesting brackets or with a
// line of more than maxKeyParts dotted key parts, so that a hostile file of
// 1 MiB cannot keep the parser busy for minutes. It skips strings and
// comments; anything it cannot make sense of is left to the parser.
func checkShape(data []byte) (int, string) {
	depth, dots, line := 0, 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
			dots = 0
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			if i+2 < len(data) && data[i+1] == c && data[i+2] == c {
				// a multi-line string, to its closing triple quote
				i += 3
				for i < len(data) && !(i+2 < len(data) && data[i] == c && data[i+1] == c && data[i+2] == c) {
					if data[i] == '\\' && c == '"' {
						i++
					}
					if i < len(data) && data[i] == '\n' {
						line++
					}
					i++
				}
				i += 2
				continue
			}
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
				if data[i] == '\\' && c == '"' {
					i++
					continue
				}
				if data[i] == c {
					break
				}
			}
		case '[', '{':
			depth++
			if depth > maxNesting {
				return line, fmt.Sprintf("tables and lists nest more than %d levels deep; a policy needs only a few", maxNesting)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '.':
			if !decimalPoint(data, i) {
				dots++
				if dots >= maxKeyParts {
					return line, fmt.Sprintf("a line has a key of more than %d dotted parts", maxKeyParts)
				}
			}
		}
	}
	return 0, ""
}

// decimalPoint reports whether the dot at i is the one point of a number
// (digits on both sides, no other dot in the same run of digits).
func decimalPoint(data []byte, i int) bool {
	digit := func(c byte) bool { return c >= '0' && c <= '9' || c == '_' }
	if i == 0 || i+1 >= len(data) || !digit(data[i-1]) || !digit(data[i+1]) {
		return false
	}
	j := i - 1
	for j >= 0 && digit(data[j]) {
		j--
	}
	if j >= 0 && data[j] == '.' {
		return false
	}
	k := i + 1
	for k < len(data) && digit(data[k]) {
		k++
	}
	return k >= len(data) || data[k] != '.'
}
