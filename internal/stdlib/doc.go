// Package stdlib declares the built-in tool namespaces that an agent brings
// in with `uses std.NS` (docs/reference/runtime.md#tool-execution, docs/reference/language.md#agents).
//
// It holds declarations only — name, namespace, description, JSON Schema of
// the arguments, risk level, default timeout and idempotency — so that the
// compiler can expose them without importing the runtime. The
// implementations live in internal/runtime/builtin, which dispatches on the
// same tool names; a test there checks that both sides list the same tools.
//
// The declarations are written in std.nx as ordinary `@tool` functions with
// empty bodies, and compiled by nexa's own compiler into catalog_gen.go by
// `go generate ./internal/stdlib` (package stdgen; the conventions are at
// the top of std.nx). Compiling them costs about 2 ms, so it is done then
// rather than at every start (BenchmarkCompileStdNX); the generated catalog
// is static data, and the lookup index is built on first use, not before
// main (BenchmarkBuildIndex: about 2 µs). A test fails while
// catalog_gen.go is stale, and another compares the generated catalog field
// by field with the hand-typed one it replaced (testdata), so the schemas,
// and the hashes of programs that use built-in tools, stay the same.
//
// # Namespaces
//
//	std.fs     file_read, file_list, file_exists (low, idempotent);
//	           file_write, file_append, file_edit, file_delete (high).
//	           Every path is confined to the run's working directory.
//	std.shell  shell_exec (high: runs `/bin/sh -c COMMAND` in the working
//	           directory, killed with its process group at the timeout, which
//	           makes the outcome unknown); shell_which (low, idempotent).
//	std.http   http_get (low, idempotent); http_post, http_put, http_delete
//	           (high, send `Idempotency-Key: RUN_ID:CALL_ID`). A timeout or
//	           broken connection after the request was written is an unknown
//	           outcome; a failure before it is an ordinary error.
//	std.time   time_now, time_format, time_parse, time_add, time_diff.
//	std.json   json_parse, json_get, json_stringify, json_validate.
//	std.text   text_length, text_upper, text_lower, text_trim, text_replace,
//	           text_split, text_join, text_contains.
//	std.hash   hash_sha256, hash_sha1, hash_md5, base64_encode,
//	           base64_decode, hex_encode, hex_decode.
//	std.math   math_calc (a small arithmetic parser, no code execution),
//	           math_random.
//	std.regex  regex_match, regex_find_all, regex_replace (Go RE2 syntax).
//
// The pure namespaces (time, json, text, hash, math, regex) are low risk and
// idempotent: they have no side effects, so running one again on resume is
// always safe. Tool names follow Nexa 2.3 where it had the tool, so prompts
// written for 2.3 agents still name the right tools.
//
// Every parameters schema has the shape of docs/reference/language.md#parameters-and-schemas: an object with
// described properties, a required list and additionalProperties false.
// Optional parameters with a natural default carry "default", which the
// runtime fills in before execution; no parameter accepts null.
package stdlib
