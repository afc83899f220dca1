package mcptool

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// TransportKind says how nexa talks to an MCP server.
type TransportKind string

// The transports of docs/reference/runtime.md#mcp-tools.
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
	// Env are the VAR=value assignments written before the command, as in
	// a shell ("stdio:GITHUB_TOKEN=$GH_TOKEN server"): the only variables
	// the server receives besides the safe defaults. A $NAME in a value
	// names a secret of the program's secrets files, so the secret itself
	// never appears in the .nx file or in the run.
	Env []EnvVar
	// OAuth are the client credentials of an HTTP server, written as
	// key=value words after its URL (nil: none; see ParseSpec).
	OAuth *OAuthSpec
	// TrustAnnotations is the trust=annotations setting: the program's
	// author vouches for the server, so its tools' annotations set their
	// risk and idempotence (riskOf). Without it, the default, annotations
	// are a server's unchecked claims: every tool is high risk, never
	// idempotent, and its hints are only shown to the person deciding.
	// It is part of Raw, so the run's source hash and server records
	// cover it.
	TrustAnnotations bool
}

// trustKey is the setting that marks a server trusted, and trustValue the
// one value it takes (docs/reference/runtime.md#mcp-tools).
const (
	trustKey   = "trust"
	trustValue = "annotations"
)

// OAuthSpec is how nexa obtains a bearer token for an HTTP server with the
// OAuth client-credentials grant, for headless runs: the settings
// client_id, client_secret, token_url and scope written after the URL.
// The secret is always a $NAME of the secrets files, never written in
// the program; the values are resolved at Connect and held in memory only.
type OAuthSpec struct {
	ClientID, ClientSecret, TokenURL EnvVar
	// Scope is the space-separated scopes to ask for (empty: none).
	Scope string
}

// httpKeys are the settings an HTTP spec may carry after its URL: the
// OAuth ones and trust.
var httpKeys = []string{"client_id", "client_secret", "token_url", "scope", trustKey}

// String returns the spec as written, for messages.
func (s Spec) String() string { return s.Raw }

// ParseSpec parses an MCP server spec: "http://…" or "https://…" is a
// Streamable HTTP endpoint, "stdio:COMMAND ARGS…" a child process; either
// may carry trust=annotations (Spec.TrustAnnotations). The
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
		return parseHTTP(raw)
	case strings.HasPrefix(lower, "stdio:"):
		return parseStdio(raw)
	case raw == "":
		return Spec{}, errors.New(`mcptool: empty MCP server spec; write "stdio:COMMAND ARGS…" or an http:// / https:// URL`)
	}
	return Spec{}, fmt.Errorf(`mcptool: unsupported MCP server spec %q; write "stdio:COMMAND ARGS…" or an http:// / https:// URL`, raw)
}

// word is one word of a stdio command line: its pieces in order, each
// literal text or a $NAME reference, with whether the text was quoted.
type word []piece

type piece struct {
	text   string
	ref    bool // text is the NAME of a $NAME or ${NAME} reference
	quoted bool
}

// literal is the word's text with references written back as $NAME, for
// words where references are not expanded.
func (w word) literal() string {
	var b strings.Builder
	for _, p := range w {
		b.WriteString(p.text)
	}
	return b.String()
}

// assignment splits a NAME=VALUE word (NAME unquoted, as in a shell) into
// the variable name and its value pieces.
func (w word) assignment() (string, word, bool) {
	if len(w) == 0 || w[0].ref || w[0].quoted {
		return "", nil, false
	}
	name, rest, ok := strings.Cut(w[0].text, "=")
	if !ok || !isName(name) {
		return "", nil, false
	}
	value := word{}
	if rest != "" {
		value = append(value, piece{text: rest})
	}
	return name, append(value, w[1:]...), true
}

func (w word) hasRef() (string, bool) {
	for _, p := range w {
		if p.ref {
			return p.text, true
		}
	}
	return "", false
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// splitCommand splits a command line into words: blanks separate words,
// '…' is literal, "…" is literal except for \" \\ \$ \` and \newline, a
// backslash outside quotes escapes the next character, and adjacent pieces
// join ('a'"b"c is one word). Shell operators outside quotes are errors.
// $NAME and ${NAME}, unquoted or in double quotes, become references; the
// caller decides where they are allowed.
func splitCommand(line string) ([]word, error) {
	var (
		words  []word
		cur    word
		inWord bool
		rs     = []rune(line)
	)
	add := func(text string, quoted bool) {
		inWord = true
		if n := len(cur); n > 0 && !cur[n-1].ref && cur[n-1].quoted == quoted {
			cur[n-1].text += text
			return
		}
		cur = append(cur, piece{text: text, quoted: quoted})
	}
	// ref reads $NAME or ${NAME} at rs[i] (a '$'), returning the index of
	// its last rune, or -1 when there is no reference there.
	ref := func(i int) (string, int) {
		j := i + 1
		if j < len(rs) && rs[j] == '{' {
			k := j + 1
			for k < len(rs) && rs[k] != '}' {
				k++
			}
			if k < len(rs) && isName(string(rs[j+1:k])) {
				return string(rs[j+1 : k]), k
			}
			return "", -1
		}
		k := j
		for k < len(rs) && (rs[k] == '_' || rs[k] >= 'a' && rs[k] <= 'z' || rs[k] >= 'A' && rs[k] <= 'Z' || k > j && rs[k] >= '0' && rs[k] <= '9') {
			k++
		}
		if k == j {
			return "", -1
		}
		return string(rs[j:k]), k - 1
	}
	flush := func() {
		if cur == nil {
			cur = word{}
		}
		words = append(words, cur)
		cur = nil
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
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated single quote in the command")
			}
			add(string(rs[i+1:j]), true)
			i = j
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`\n", rs[j+1]) {
					if rs[j+1] != '\n' {
						add(string(rs[j+1]), true)
					}
					j++
					continue
				}
				if rs[j] == '$' {
					if name, end := ref(j); end >= 0 {
						cur = append(cur, piece{text: name, ref: true, quoted: true})
						j = end
						continue
					}
				}
				add(string(rs[j]), true)
			}
			if j == len(rs) {
				return nil, errors.New("unterminated double quote in the command")
			}
			if cur == nil {
				cur = word{}
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
			add(string(rs[i]), true)
		case r == '$' && i+1 < len(rs) && isExpansionStart(rs[i+1]):
			name, end := ref(i)
			if end < 0 {
				return nil, fmt.Errorf("unquoted %q in the command: it is started without a shell, so expansions other than $NAME in a VAR=value assignment do not work; quote it to pass it literally", "$")
			}
			inWord = true
			cur = append(cur, piece{text: name, ref: true})
			i = end
		case strings.ContainsRune("|&;<>`", r):
			return nil, fmt.Errorf("unquoted %q in the command: it is started without a shell, so pipes, redirections, command lists and expansions do not work; quote it to pass it literally, pass values through VAR=value assignments, or wrap the command in a script", string(r))
		default:
			add(string(r), false)
		}
	}
	if inWord {
		flush()
	}
	return words, nil
}

// parseStdio reads the words after "stdio:": leading VAR=value
// assignments, then the command and its arguments. Among the leading
// words, trust=annotations is nexa's setting (see Spec.TrustAnnotations),
// not a variable: the name "trust" in lower case is reserved there.
func parseStdio(raw string) (Spec, error) {
	words, err := splitCommand(raw[len("stdio:"):])
	if err != nil {
		return Spec{}, fmt.Errorf("mcptool: MCP server %q: %w", raw, err)
	}
	sp := Spec{Raw: raw, Transport: TransportStdio}
	for len(words) > 0 {
		name, value, ok := words[0].assignment()
		if !ok {
			break
		}
		words = words[1:]
		if name == trustKey {
			if err := sp.setTrust(value); err != nil {
				return Spec{}, err
			}
			continue
		}
		sp.Env = append(sp.Env, EnvVar{Name: name, value: value})
	}
	if len(words) == 0 || words[0].literal() == "" {
		return Spec{}, fmt.Errorf("mcptool: MCP server %q names no command; write \"stdio:COMMAND ARGS…\"", raw)
	}
	args := make([]string, 0, len(words))
	for _, w := range words {
		if name, ok := w.hasRef(); ok {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: unquoted \"$\" of $%s: the command is started without a shell, and $NAME is only expanded in a VAR=value assignment before the command (write VAR=$%s COMMAND …); quote it to pass it literally", raw, name, name)
		}
		args = append(args, w.literal())
	}
	sp.Command, sp.Args = args[0], args[1:]
	return sp, nil
}

// setTrust reads the value of a trust= setting into sp: only
// "annotations", written out, and only once. Anything else is an error
// rather than "untrusted", so that a program never believes it said
// something nexa did not read.
func (sp *Spec) setTrust(value word) error {
	if sp.TrustAnnotations {
		return fmt.Errorf("mcptool: MCP server %q: setting %s is given twice", sp.Raw, trustKey)
	}
	if _, ref := value.hasRef(); ref || value.literal() != trustValue {
		return fmt.Errorf("mcptool: MCP server %q: %s=%s: the only trust setting is %s=%s (the server's tool annotations set who approves its calls); leave it out to trust no annotation", sp.Raw, trustKey, value.literal(), trustKey, trustValue)
	}
	sp.TrustAnnotations = true
	return nil
}

// parseHTTP reads an HTTP spec: the URL, then optional key=value settings
// quoted as in a stdio command line: trust=annotations (see
// Spec.TrustAnnotations) and OAuth client credentials:
//
//	https://crm.example.com/mcp client_id=$CRM_ID client_secret=$CRM_SECRET token_url=https://auth.example.com/token scope='crm.read crm.write'
//
// client_id, client_secret and token_url go together; client_secret must
// be a lone $NAME (a secret never appears in the program); an unknown or
// repeated setting is an error, since a misspelt one would otherwise send
// the requests without the credentials the author meant.
func parseHTTP(raw string) (Spec, error) {
	rawURL, rest := raw, ""
	if i := strings.IndexAny(raw, " \t\r\n"); i >= 0 {
		rawURL, rest = raw[:i], raw[i+1:]
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Spec{}, fmt.Errorf("mcptool: MCP server URL %q: %w", rawURL, err)
	}
	if u.Host == "" {
		return Spec{}, fmt.Errorf("mcptool: MCP server URL %q has no host", rawURL)
	}
	sp := Spec{Raw: raw, Transport: TransportHTTP, URL: rawURL}
	if strings.TrimSpace(rest) == "" {
		return sp, nil
	}
	words, err := splitCommand(rest)
	if err != nil {
		return Spec{}, fmt.Errorf("mcptool: MCP server %q: the settings after the URL: %w", raw, err)
	}
	settings := map[string]EnvVar{}
	for _, w := range words {
		name, value, ok := w.assignment()
		if !ok {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: invalid setting %q after the URL; write key=value with key one of %s", raw, w.literal(), strings.Join(httpKeys, ", "))
		}
		if !slices.Contains(httpKeys, name) {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: unknown setting %q; an HTTP server takes %s", raw, name, strings.Join(httpKeys, ", "))
		}
		if _, dup := settings[name]; dup {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: setting %s is given twice", raw, name)
		}
		settings[name] = EnvVar{Name: name, value: value}
	}
	if trust, ok := settings[trustKey]; ok {
		if err := sp.setTrust(trust.value); err != nil {
			return Spec{}, err
		}
		delete(settings, trustKey)
		if len(settings) == 0 {
			return sp, nil
		}
	}
	for _, k := range []string{"client_id", "client_secret", "token_url"} {
		if _, ok := settings[k]; !ok {
			return Spec{}, fmt.Errorf("mcptool: MCP server %q: OAuth client credentials need client_id, client_secret and token_url together; %s is missing", raw, k)
		}
	}
	secret := settings["client_secret"]
	if refs := secret.Refs(); len(secret.value) != 1 || len(refs) != 1 {
		return Spec{}, fmt.Errorf("mcptool: MCP server %q: client_secret must be a $NAME of the secrets files (secrets.nxs, NEXA_SECRETS), never the secret itself: write client_secret=$NAME", raw)
	}
	scope := settings["scope"]
	if _, ref := scope.value.hasRef(); ref {
		return Spec{}, fmt.Errorf("mcptool: MCP server %q: scope is written as it is, without $NAME", raw)
	}
	sp.OAuth = &OAuthSpec{ClientID: settings["client_id"], ClientSecret: secret, TokenURL: settings["token_url"], Scope: strings.Join(strings.Fields(scope.value.literal()), " ")}
	return sp, nil
}

// EnvVar is one VAR=value assignment before a stdio server's command.
type EnvVar struct {
	// Name is the variable set in the server's environment.
	Name  string
	value word
}

// Refs lists the names the value refers to as $NAME, in order.
func (v EnvVar) Refs() []string {
	var names []string
	for _, p := range v.value {
		if p.ref {
			names = append(names, p.text)
		}
	}
	return names
}

// Resolve renders the value, looking each $NAME up with lookup (the
// program's tool secrets); a name lookup does not know is an error that
// names it, never a value.
func (v EnvVar) Resolve(lookup func(name string) (string, bool)) (string, error) {
	var b strings.Builder
	for _, p := range v.value {
		if !p.ref {
			b.WriteString(p.text)
			continue
		}
		val, ok := "", false
		if lookup != nil {
			val, ok = lookup(p.text)
		}
		if !ok {
			return "", fmt.Errorf("%s=$%s: no secret %s in the secrets files (secrets.nxs, NEXA_SECRETS) that a tool may read", v.Name, p.text, p.text)
		}
		b.WriteString(val)
	}
	return b.String(), nil
}

// isExpansionStart reports whether the rune after a '$' would make a shell
// expand something ($NAME, ${…}, $(…), $1, $?…).
func isExpansionStart(r rune) bool {
	return r == '{' || r == '(' || r == '_' || r == '?' || r == '@' || r == '*' || r == '#' || r == '!' || r == '$' ||
		(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}
