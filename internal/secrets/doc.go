// Package secrets parses `.nxs` secrets files (docs/reference/language.md#secrets-files) and
// keeps their values out of sight.
//
// A program's secrets come from secrets.nxs beside its main file, any
// included .nxs file and the file named by NEXA_SECRETS, loaded in that
// order and merged with later files winning key by key (Merge). They live
// only in memory: they are never part of the IR, its hash, the store, logs
// or JSON output (docs/reference/runtime.md#invariants, invariant 6). The package helps keep it so:
//
//   - parse errors are positioned ("file:line:col: expected …, found …")
//     but name only the kind of token found, never its text, and show no
//     source line;
//   - formatting a Value, a File or a Set with fmt (%v, %s, %#v) prints
//     "[REDACTED]" or the shape only; values come out only through explicit
//     accessors (Value.String, Value.Map, Set.Lookup, Set.Env);
//   - a Redactor (NewRedactor) replaces every known secret value — the
//     set's strings, the model key, the values of secret-named environment
//     variables (IsSecretName, EnvValues) and URL passwords — and its
//     JSON-escaped, hex, URL-escaped and base64 forms in text that is
//     about to be stored, logged, printed or sent, and its Writer does the
//     same for a stream (tool logs, MCP server stderr, nexa's stdout and
//     stderr).
package secrets
