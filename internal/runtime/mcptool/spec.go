package mcptool

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TransportKind says how nexa talks to an MCP server.
type TransportKind string

// The transports of runtime.md section 9.
const (
	// TransportStdio is a child process speaking newline-delimited
	// JSON-RPC on its stdin and stdout.
	TransportStdio TransportKind = "stdio"
	// TransportHTTP is the Streamable HTTP transport of an http:// or
	// https:// endpoint.
	TransportHTTP TransportKind = "http"
)

// Spec is a parsed MCP server spec, the text of `uses mcp:"…"` or
// `tool X { mcp: "…" }`. Raw is kept as written (trimmed) because the run
// records servers by it and a resume compares it.
type Spec struct {
	// Raw is the spec as written, without surrounding spaces.
	Raw       string
	Transport TransportKind
	// URL is the endpoint of an HTTP server.
	URL string
	// Command and Args are the child process of a stdio server, split like
	// a shell would split simple quoting, but never run by a shell.
	Command string
	Args    []string
}

// String returns the spec as written, for messages.
func (s Spec) String() string { return s.Raw }

// ParseSpec parses an MCP server spec: "http://…" or "https://…" is a
// Streamable HTTP endpoint, "stdio:COMMAND ARGS…" a child process. The
// command line is split into words with single quotes, double quotes and
// backslashes as in a POSIX shell, but nothing else of a shell: unquoted
// pipes, redirections, `;`, `&`, backquotes and `$` expansions are refused,
// since the child is started directly and would otherwise receive them as
// literal arguments, which is never what the author meant.
func ParseSpec(s string) (Spec, error) {
	raw := strings.TrimSpace(s)
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"):
		u, err := url.Parse(raw)
		if err != nil {
			return Spec{}, fmt.Errorf("mcptool: MCP server URL %q: %w", raw, err)
		}
		if u.Host == "" {
			return Spec{}, fmt.Errorf("mcptool: MCP server URL %q has no host", raw)
		}
		return Spec{Raw: raw, Transport: TransportHTTP, URL: raw}, nil
	case strings.HasPrefix(lower, "stdio:"):
		words, err := splitCommand(raw[len("stdio:"):])
		if err != nil {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: %w", raw, err)
		}
		if len(words) == 0 || words[0] == "" {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q names no command; write \"stdio:COMMAND ARGS…\"", raw)
		}
		return Spec{Raw: raw, Transport: TransportStdio, Command: words[0], Args: words[1:]}, nil
	case raw == "":
		return Spec{}, errors.New(`mcptool: empty MCP server spec; write "stdio:COMMAND ARGS…" or an http:// / https:// URL`)
	}
	return Spec{}, fmt.Errorf(`mcptool: unsupported MCP server spec %q; write "stdio:COMMAND ARGS…" or an http:// / https:// URL`, raw)
}

// splitCommand splits a command line into words: blanks separate words,
// '…' is literal, "…" is literal except for \" \\ \$ \` and \newline, a
// backslash outside quotes escapes the next character, and adjacent pieces
// join ('a'"b"c is one word). Shell operators outside quotes are errors.
func splitCommand(line string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		rs     = []rune(line)
	)
	flush := func() {
		words = append(words, cur.String())
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				flush()
			}
		case r == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated single quote in the command")
			}
			cur.WriteString(string(rs[i+1 : j]))
			i = j
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`\n", rs[j+1]) {
					if rs[j+1] != '\n' {
						cur.WriteRune(rs[j+1])
					}
					j++
					continue
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, errors.New("unterminated double quote in the command")
			}
			i = j
		case r == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("the command ends with a lone backslash")
			}
			i++
			if rs[i] == '\n' { // line continuation
				continue
			}
			inWord = true
			cur.WriteRune(rs[i])
		case strings.ContainsRune("|&;<>`", r), r == '$' && i+1 < len(rs) && isExpansionStart(rs[i+1]):
			return nil, fmt.Errorf("unquoted %q in the command: it is started without a shell, so pipes, redirections, command lists and expansions do not work; quote it to pass it literally, pass values through the environment, or wrap the command in a script", string(r))
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	if inWord {
		flush()
	}
	return words, nil
}

// isExpansionStart reports whether the rune after a '$' would make a shell
// expand something ($NAME, ${…}, $(…), $1, $?…).
func isExpansionStart(r rune) bool {
	return r == '{' || r == '(' || r == '_' || r == '?' || r == '@' || r == '*' || r == '#' || r == '!' || r == '$' ||
		(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}
