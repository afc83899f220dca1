// Package toolenv builds the least environment a tool process starts with.
//
// A tool is code the model steers: whatever its environment holds, a
// prompt-injected call can print and send back. So tools do not inherit
// nexa's environment, which typically holds provider keys (NEXA_API_KEY,
// OPENAI_API_KEY, …), cloud credentials and database URLs. They get a short
// allow-list of variables that say where things are and how to render text,
// and nothing else; what a tool needs beyond that is handed to it
// explicitly (secrets files for Python tools, VAR=value assignments in an
// MCP server's spec).
package toolenv

import "strings"

// mcpNames are the variables the official MCP SDKs pass to a stdio server
// by default on Unix, which servers expect to find.
var mcpNames = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// toolNames are added for Python and shell tools: the temporary directory,
// the time zone, and proxy and CA settings so a tool that reaches the
// network works where nexa's own requests do.
var toolNames = []string{
	"TMPDIR", "TZ",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// isLocale reports whether name is a locale variable (LANG, LANGUAGE,
// LC_ALL, LC_CTYPE, …): they decide how a tool decodes and prints text.
func isLocale(name string) bool {
	return name == "LANG" || name == "LANGUAGE" || strings.HasPrefix(name, "LC_")
}

// MCP returns the entries of environ (KEY=VALUE, as from os.Environ) that a
// stdio MCP server inherits: HOME, LOGNAME, PATH, SHELL, TERM, USER and the
// locale, in the order of environ.
func MCP(environ []string) []string {
	return filter(environ, mcpNames)
}

// Tool returns the entries of environ that a Python or shell tool
// inherits: those of MCP plus TMPDIR, TZ, the proxy variables
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY, either case) and
// SSL_CERT_FILE / SSL_CERT_DIR. The executors add the call variables
// (NEXA_RUN_ID, NEXA_CALL_ID, NEXA_IDEMPOTENCY_KEY) themselves.
func Tool(environ []string) []string {
	return filter(environ, append(append([]string{}, mcpNames...), toolNames...))
}

func filter(environ, names []string) []string {
	allowed := make(map[string]bool, len(names))
	for _, n := range names {
		allowed[n] = true
	}
	out := []string{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (allowed[k] || isLocale(k)) {
			out = append(out, kv)
		}
	}
	return out
}
