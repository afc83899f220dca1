// Package shellquote writes words so a POSIX shell reads them back
// unchanged. nexa prints commands for people and scripts to paste (the
// resume hints of a run, the serve pages), and a path or agent name with a
// space or quote in it must survive the paste.
package shellquote

import "strings"

// plain holds the bytes that never need quoting; a word made only of them
// is printed as it is, so the common case stays readable.
const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+"

// Quote returns s as one shell word: unchanged when every byte is plain,
// otherwise in single quotes, with each single quote of s closed, escaped
// and reopened. The empty string becomes a pair of single quotes.
func Quote(s string) string {
	if s != "" && strings.Trim(s, plain) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each word and joins them with spaces: a command line.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}
