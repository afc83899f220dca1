package docscheck

import (
	"strings"
)

// nexaCommands returns the argument lists (after the word "nexa") of every
// nexa command a shell script runs, also inside $(…). It understands the
// little shell the recipes use: quotes, line continuations, expansions,
// pipes, lists and redirections. An expansion becomes the word "X", which
// the flag parser accepts as any flag's value.
func nexaCommands(script string) [][]string {
	var out [][]string
	var words []string // the current simple command
	var word strings.Builder
	inWord := false
	flushWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		flushWord()
		if cmd := commandWords(words); len(cmd) > 0 && cmd[0] == "nexa" {
			out = append(out, cmd[1:])
		}
		words = nil
	}
	r := []rune(script)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] != '\n' {
				word.WriteRune(r[i])
				inWord = true
			}
		case c == '\'':
			j := i + 1
			for j < len(r) && r[j] != '\'' {
				j++
			}
			word.WriteString(string(r[i+1 : min(j, len(r))]))
			inWord = true
			i = j
		case c == '"':
			inWord = true
			for i++; i < len(r) && r[i] != '"'; i++ {
				switch {
				case r[i] == '\\' && i+1 < len(r):
					i++
					word.WriteRune(r[i])
				case r[i] == '$':
					var inner [][]string
					i, inner = expansion(r, i)
					out = append(out, inner...)
					word.WriteString("X")
				default:
					word.WriteRune(r[i])
				}
			}
		case c == '$':
			var inner [][]string
			i, inner = expansion(r, i)
			out = append(out, inner...)
			word.WriteString("X")
			inWord = true
		case c == '#' && !inWord:
			for i < len(r) && r[i] != '\n' {
				i++
			}
			endCommand()
		case c == ' ' || c == '\t':
			flushWord()
		case strings.ContainsRune("\n;|&(){}", c):
			endCommand()
		case c == '<' || c == '>':
			// A redirection ends what the command is given: the
			// target is no argument (nor the 2 of 2>). Skip to the
			// next operator.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			endCommand()
			for i+1 < len(r) && !strings.ContainsRune("\n;|&", r[i+1]) {
				i++
			}
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	endCommand()
	return out
}

// expansion reads the $… starting at r[i] and returns the index of its last
// rune and the nexa commands inside it, when it is a command substitution.
func expansion(r []rune, i int) (int, [][]string) {
	if i+1 >= len(r) {
		return i, nil
	}
	switch r[i+1] {
	case '(', '{':
		open, closing := r[i+1], map[rune]rune{'(': ')', '{': '}'}[r[i+1]]
		depth := 0
		for j := i + 1; j < len(r); j++ {
			switch r[j] {
			case open:
				depth++
			case closing:
				depth--
				if depth == 0 {
					if open == '(' {
						return j, nexaCommands(string(r[i+2 : j]))
					}
					return j, nil
				}
			}
		}
		return len(r) - 1, nil
	default:
		j := i + 1
		for j < len(r) && (r[j] == '_' || r[j] >= 'a' && r[j] <= 'z' || r[j] >= 'A' && r[j] <= 'Z' || r[j] >= '0' && r[j] <= '9' || j == i+1 && strings.ContainsRune("?#@*!$-", r[j])) {
			j++
			if j == i+2 && strings.ContainsRune("?#@*!$-", r[j-1]) {
				break
			}
		}
		return j - 1, nil
	}
}

// commandWords drops what precedes the command proper: shell keywords
// that open a compound command and variable assignments.
func commandWords(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case w == "then" || w == "do" || w == "else" || w == "elif" || w == "if" || w == "while" || w == "until" || w == "!" || w == "time":
			words = words[1:]
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "="):
			words = words[1:]
		default:
			return words
		}
	}
	return nil
}
