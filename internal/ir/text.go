package ir

import "strings"

// RemoveMargin removes the whitespace prefix common to every non-blank line
// and empties blank lines, like Python's textwrap.dedent, after normalising
// CRLF line ends. Unlike the compiler's Dedent it gives the first line no
// special place, so applying it again changes nothing: the runtime applies
// it to python! bodies, which the compiler has already dedented, so that
// hand-built IR works too.
func RemoveMargin(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	margin, first := "", true
	for _, l := range lines {
		if strings.TrimLeft(l, " \t") == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			margin, first = indent, false
			continue
		}
		margin = commonPrefix(margin, indent)
	}
	for i, l := range lines {
		if strings.TrimLeft(l, " \t") == "" {
			lines[i] = ""
			continue
		}
		lines[i] = l[len(margin):]
	}
	return strings.Join(lines, "\n")
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:i]
}
