package stdlib

import (
	"encoding/json"
	"strings"
)

// Default timeouts in seconds. Pure functions finish in microseconds; the
// bound only protects against a pathological input.
const (
	timeoutFS    = 30
	timeoutShell = 600
	timeoutWhich = 10
	timeoutHTTP  = 120
	timeoutPure  = 10
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// httpSend declares the tool of an HTTP method that changes something
// (POST, PUT, DELETE): they differ only in the method and two descriptions.
func httpSend(method, bodyDesc, contentTypeDesc string) Tool {
	return Tool{
		Name: "http_" + strings.ToLower(method), Namespace: "std.http", Risk: RiskHigh, Timeout: timeoutHTTP,
		Description: "Send an HTTP " + method + ` request with an Idempotency-Key header (redirects are not followed). Returns JSON {"status","headers","body"}; a status of 400 or more is reported as a failure.`,
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "Absolute http or https URL"},
    "body": {"type": "string", "default": "", "description": "` + bodyDesc + `"},
    "content_type": {"type": "string", "description": "` + contentTypeDesc + `"},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Request headers"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600, "default": 30, "description": "Seconds to wait for the response"}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
	}
}

// catalog is every built-in tool in namespace order. The schemas are
// literal JSON so that what the model sees is exactly what is reviewed here;
// a test compiles each one.
var catalog = []Tool{
	// ---------------------------------------------------------------- std.fs
	{
		Name: "file_read", Namespace: "std.fs", Risk: RiskLow, Timeout: timeoutFS, Idempotent: true,
		Description: "Read a UTF-8 text file inside the working directory. Returns the text; when the file is longer than max_bytes, a note at the end says how to read the rest with offset.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the working directory (or absolute inside it)"},
    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Byte offset to start reading at"},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": 1048576, "default": 262144, "description": "Maximum number of bytes to return"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_list", Namespace: "std.fs", Risk: RiskLow, Timeout: timeoutFS, Idempotent: true,
		Description: "List a directory inside the working directory. Returns JSON {\"entries\":[{\"path\",\"type\",\"size\"}],\"truncated\"} with paths relative to the working directory. Symbolic links are listed, never followed.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "default": ".", "description": "Directory path, relative to the working directory"},
    "recursive": {"type": "boolean", "default": false, "description": "Also list subdirectories, depth first"},
    "pattern": {"type": "string", "description": "Only list names matching this glob (for example *.go); directories are still descended"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 500, "description": "Maximum number of entries to return"}
  },
  "required": [],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_exists", Namespace: "std.fs", Risk: RiskLow, Timeout: timeoutFS, Idempotent: true,
		Description: "Check whether a path exists inside the working directory. Returns JSON {\"exists\",\"type\",\"size\"}; type is file, directory, symlink or other.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path, relative to the working directory"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_write", Namespace: "std.fs", Risk: RiskHigh, Timeout: timeoutFS,
		Description: "Create or overwrite a text file inside the working directory, creating missing parent directories.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the working directory"},
    "content": {"type": "string", "description": "The complete new content of the file"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_append", Namespace: "std.fs", Risk: RiskHigh, Timeout: timeoutFS,
		Description: "Append text to a file inside the working directory, creating the file (and missing parent directories) when needed.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the working directory"},
    "content": {"type": "string", "description": "Text to add at the end of the file"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_edit", Namespace: "std.fs", Risk: RiskHigh, Timeout: timeoutFS,
		Description: "Edit a text file inside the working directory by replacing an exact piece of text. Fails when old_text is not found, or is found more than once and replace_all is false (add surrounding text to make it unique).",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the working directory"},
    "old_text": {"type": "string", "minLength": 1, "description": "Exact text to replace, including whitespace"},
    "new_text": {"type": "string", "description": "Replacement text"},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence instead of requiring exactly one"}
  },
  "required": ["path", "old_text", "new_text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "file_delete", Namespace: "std.fs", Risk: RiskHigh, Timeout: timeoutFS,
		Description: "Delete a file inside the working directory. A symbolic link is removed itself, not its target. Directories are refused unless recursive is true.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path, relative to the working directory"},
    "recursive": {"type": "boolean", "default": false, "description": "Allow deleting a directory with everything in it"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	},

	// ------------------------------------------------------------- std.shell
	{
		Name: "shell_exec", Namespace: "std.shell", Risk: RiskHigh, Timeout: timeoutShell,
		Description: "Run a command with /bin/sh -c in the working directory. Returns JSON {\"exit_code\",\"stdout\",\"stderr\"} (long output keeps its beginning and end). A non-zero exit code is reported as a failure. Background processes are killed when the command ends.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "Shell command line"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command is killed; at most the tool's own timeout, which is also the default"}
  },
  "required": ["command"],
  "additionalProperties": false
}`),
	},
	{
		Name: "shell_which", Namespace: "std.shell", Risk: RiskLow, Timeout: timeoutWhich, Idempotent: true,
		Description: "Find a program in PATH. Returns JSON {\"found\",\"path\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "program": {"type": "string", "minLength": 1, "description": "Program name, such as git"}
  },
  "required": ["program"],
  "additionalProperties": false
}`),
	},

	// -------------------------------------------------------------- std.http
	{
		Name: "http_get", Namespace: "std.http", Risk: RiskLow, Timeout: timeoutHTTP, Idempotent: true,
		Description: "Send an HTTP GET request (redirects are followed). Returns JSON {\"status\",\"headers\",\"body\"}; a status of 400 or more is reported as a failure.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "Absolute http or https URL"},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Request headers"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600, "default": 30, "description": "Seconds to wait for the response"}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
	},
	httpSend("POST", "Request body", "Content-Type of the body; default application/json when the body is JSON, else text/plain"),
	httpSend("PUT", "Request body", "Content-Type of the body; default application/json when the body is JSON, else text/plain"),
	httpSend("DELETE", "Request body, usually empty", "Content-Type of the body, when there is one"),

	// -------------------------------------------------------------- std.time
	{
		Name: "time_now", Namespace: "std.time", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Current date and time. Returns JSON {\"time\",\"unix\",\"timezone\",\"weekday\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "timezone": {"type": "string", "default": "UTC", "description": "IANA time zone such as Europe/Paris, or UTC, or Local"},
    "format": {"type": "string", "default": "rfc3339", "description": "Output format: rfc3339, rfc3339nano, rfc1123, date, time, datetime, unix, unix_ms, or a strftime pattern such as %Y-%m-%d %H:%M"}
  },
  "required": [],
  "additionalProperties": false
}`),
	},
	{
		Name: "time_format", Namespace: "std.time", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Format a time. Accepts RFC 3339 (2024-05-01T10:00:00Z), 2024-05-01 10:00:00, 2024-05-01, RFC 1123 or unix seconds; times without an offset are in timezone (default UTC). Returns the formatted text.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "time": {"type": "string", "description": "The time to format"},
    "format": {"type": "string", "description": "rfc3339, rfc3339nano, rfc1123, date, time, datetime, unix, unix_ms, or a strftime pattern such as %d %B %Y"},
    "timezone": {"type": "string", "description": "IANA time zone to convert to (and to read times without an offset in); default: keep the time's own offset"}
  },
  "required": ["time", "format"],
  "additionalProperties": false
}`),
	},
	{
		Name: "time_parse", Namespace: "std.time", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Parse a date or time. Without format, common forms are recognised (RFC 3339, 2024-05-01 10:00:00, 2024-05-01, RFC 1123, unix seconds). Returns JSON {\"time\" (RFC 3339),\"unix\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "The text to parse"},
    "format": {"type": "string", "description": "strftime pattern such as %d/%m/%Y %H:%M, or a named format (rfc3339, rfc1123, date, datetime, unix)"},
    "timezone": {"type": "string", "default": "UTC", "description": "IANA time zone for text without an offset"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "time_add", Namespace: "std.time", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Add (or, with negative values, subtract) a duration and calendar units to a time. Returns the result in RFC 3339, keeping the input's offset.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "time": {"type": "string", "description": "Start time (RFC 3339, 2024-05-01 10:00:00, 2024-05-01 or unix seconds)"},
    "duration": {"type": "string", "description": "Duration such as 1h30m, -45s, 2d or 1w (units: ms, s, m, h, d, w)"},
    "years": {"type": "integer", "default": 0, "description": "Calendar years to add"},
    "months": {"type": "integer", "default": 0, "description": "Calendar months to add"},
    "days": {"type": "integer", "default": 0, "description": "Calendar days to add"}
  },
  "required": ["time"],
  "additionalProperties": false
}`),
	},
	{
		Name: "time_diff", Namespace: "std.time", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Time from start to end (negative when end is earlier). Returns JSON {\"value\",\"unit\",\"duration\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "start": {"type": "string", "description": "Start time (RFC 3339, 2024-05-01 10:00:00, 2024-05-01 or unix seconds)"},
    "end": {"type": "string", "description": "End time, same forms"},
    "unit": {"type": "string", "enum": ["seconds", "minutes", "hours", "days", "weeks"], "default": "seconds", "description": "Unit of value"}
  },
  "required": ["start", "end"],
  "additionalProperties": false
}`),
	},

	// -------------------------------------------------------------- std.json
	{
		Name: "json_parse", Namespace: "std.json", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Check that text is valid JSON and return it pretty-printed; a syntax error names its line and column.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "JSON text"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "json_get", Namespace: "std.json", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Extract a value from JSON text by path and return it as JSON. Paths look like items[0].name or items.0.name; use [\"a.b\"] for keys with dots; negative indexes count from the end; an empty path is the whole document.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "JSON text"},
    "path": {"type": "string", "description": "Path to the value"}
  },
  "required": ["text", "path"],
  "additionalProperties": false
}`),
	},
	{
		Name: "json_stringify", Namespace: "std.json", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Encode a value as JSON text, with object keys sorted.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "value": {"description": "Any JSON value to encode"},
    "indent": {"type": "integer", "minimum": 0, "maximum": 8, "default": 2, "description": "Spaces per indentation level; 0 gives compact output"}
  },
  "required": ["value"],
  "additionalProperties": false
}`),
	},
	{
		Name: "json_validate", Namespace: "std.json", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Check JSON text for syntax and, when schema is given, against a JSON Schema (draft 2020-12 by default; no remote references). Returns JSON {\"valid\",\"errors\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "JSON text to check"},
    "schema": {"type": "string", "description": "JSON Schema, as JSON text"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},

	// -------------------------------------------------------------- std.text
	{
		Name: "text_length", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Measure text. Returns JSON {\"characters\",\"bytes\",\"words\",\"lines\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to measure"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_upper", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Convert text to upper case (Unicode aware).",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to convert"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_lower", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Convert text to lower case (Unicode aware).",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to convert"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_trim", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Remove whitespace (or the given characters) from the ends of text.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to trim"},
    "characters": {"type": "string", "description": "Set of characters to remove instead of whitespace"},
    "side": {"type": "string", "enum": ["both", "left", "right"], "default": "both", "description": "Which end to trim"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_replace", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Replace occurrences of a substring (no patterns; see regex_replace for those).",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Original text"},
    "old": {"type": "string", "minLength": 1, "description": "Substring to replace"},
    "new": {"type": "string", "description": "Replacement"},
    "count": {"type": "integer", "minimum": 1, "description": "Replace at most this many occurrences, from the start; default all"}
  },
  "required": ["text", "old", "new"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_split", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Split text by a separator. Returns JSON {\"parts\",\"count\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to split"},
    "separator": {"type": "string", "default": "\n", "description": "Separator; an empty separator splits into characters"},
    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of parts; the last part holds the rest"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_join", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Join strings with a separator.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "parts": {"type": "array", "items": {"type": "string"}, "description": "Strings to join"},
    "separator": {"type": "string", "default": "\n", "description": "Separator placed between parts"}
  },
  "required": ["parts"],
  "additionalProperties": false
}`),
	},
	{
		Name: "text_contains", Namespace: "std.text", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Look for a substring. Returns JSON {\"contains\",\"count\",\"index\"}; index is the character position of the first occurrence, or -1.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to search"},
    "substring": {"type": "string", "minLength": 1, "description": "Substring to look for"},
    "ignore_case": {"type": "boolean", "default": false, "description": "Compare without regard to case"}
  },
  "required": ["text", "substring"],
  "additionalProperties": false
}`),
	},

	// -------------------------------------------------------------- std.hash
	{
		Name: "hash_sha256", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "SHA-256 digest of the UTF-8 bytes of text.",
		Parameters:  digestSchema,
	},
	{
		Name: "hash_sha1", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "SHA-1 digest of the UTF-8 bytes of text (for checksums only; not collision resistant).",
		Parameters:  digestSchema,
	},
	{
		Name: "hash_md5", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "MD5 digest of the UTF-8 bytes of text (for checksums only; not collision resistant).",
		Parameters:  digestSchema,
	},
	{
		Name: "base64_encode", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Base64-encode the UTF-8 bytes of text.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to encode"},
    "url_safe": {"type": "boolean", "default": false, "description": "Use the URL-safe alphabet without padding (as in JWTs)"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "base64_decode", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Decode base64 (standard or URL-safe, padded or not) to text. Fails when the bytes are not UTF-8 text, and then shows them in hex.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Base64 text"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "hex_encode", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Hex-encode the UTF-8 bytes of text (lower case).",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to encode"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "hex_decode", Namespace: "std.hash", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Decode hex to text. Fails when the bytes are not UTF-8 text.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Hex digits (spaces are ignored)"}
  },
  "required": ["text"],
  "additionalProperties": false
}`),
	},

	// -------------------------------------------------------------- std.math
	{
		Name: "math_calc", Namespace: "std.math", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Evaluate an arithmetic expression in 64-bit floating point: numbers, + - * / % and ^ (power), parentheses, constants pi and e, functions abs sqrt cbrt exp ln log log2 log10 sin cos tan asin acos atan atan2 floor ceil round trunc min max pow hypot. round(x, n) rounds to n decimals; log(x, b) is the base-b logarithm. Returns the number.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "expression": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "Expression such as (10 + 5) * 2 or sqrt(2)^2"}
  },
  "required": ["expression"],
  "additionalProperties": false
}`),
	},
	{
		Name: "math_random", Namespace: "std.math", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "A uniformly random integer between min and max, both included.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "min": {"type": "integer", "description": "Smallest possible value"},
    "max": {"type": "integer", "description": "Largest possible value"}
  },
  "required": ["min", "max"],
  "additionalProperties": false
}`),
	},

	// ------------------------------------------------------------- std.regex
	{
		Name: "regex_match", Namespace: "std.regex", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Find the first match of a regular expression (Go RE2 syntax: no backreferences or lookaround). Returns JSON {\"matched\",\"match\",\"index\",\"groups\",\"named\"}; index is a character position.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Regular expression"},
    "text": {"type": "string", "description": "Text to search"},
    "flags": {"type": "string", "pattern": "^[imsU]*$", "default": "", "description": "Flags: i ignore case, m multi-line, s dot matches newline, U ungreedy"}
  },
  "required": ["pattern", "text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "regex_find_all", Namespace: "std.regex", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Find all non-overlapping matches of a regular expression (Go RE2 syntax). Returns JSON {\"count\",\"matches\":[{\"match\",\"index\",\"groups\"}],\"truncated\"}.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Regular expression"},
    "text": {"type": "string", "description": "Text to search"},
    "flags": {"type": "string", "pattern": "^[imsU]*$", "default": "", "description": "Flags: i ignore case, m multi-line, s dot matches newline, U ungreedy"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100, "description": "Maximum number of matches to return"}
  },
  "required": ["pattern", "text"],
  "additionalProperties": false
}`),
	},
	{
		Name: "regex_replace", Namespace: "std.regex", Risk: RiskLow, Timeout: timeoutPure, Idempotent: true,
		Description: "Replace every match of a regular expression (Go RE2 syntax). In replacement, $1 or ${name} insert groups (\\1 is accepted as $1) and $$ is a dollar sign, unless literal is true. Returns the new text.",
		Parameters: schema(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Regular expression"},
    "text": {"type": "string", "description": "Text to change"},
    "replacement": {"type": "string", "description": "Replacement text"},
    "flags": {"type": "string", "pattern": "^[imsU]*$", "default": "", "description": "Flags: i ignore case, m multi-line, s dot matches newline, U ungreedy"},
    "literal": {"type": "boolean", "default": false, "description": "Insert replacement as is, without group references"}
  },
  "required": ["pattern", "text", "replacement"],
  "additionalProperties": false
}`),
	},
}

// digestSchema is shared by the three hash tools, which take the same
// arguments.
var digestSchema = schema(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "Text to hash"},
    "encoding": {"type": "string", "enum": ["hex", "base64"], "default": "hex", "description": "Encoding of the digest"}
  },
  "required": ["text"],
  "additionalProperties": false
}`)
