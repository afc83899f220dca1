package policy

import (
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

// stripComment drops a # comment that is not inside a string.
func stripComment(l string) string {
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return l[:i]
		}
	}
	return l
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
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{' || c == ',':
			starts = append(starts, i+1)
		}
	}
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
		case c == '=':
			if strings.TrimSpace(s[:i]) == "" {
				return -1
			}
			return i
		case c == ' ' || c == '\t' || c == '.' || c == '_' || c == '-' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
		default:
			return -1
		}
	}
	return -1
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
