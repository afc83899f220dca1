package builtin

import (
	"github.com/nexa-run/nexa/internal/tool"
	"strings"
)

// pureTools are the tools of std.time, std.json, std.text, std.hash,
// std.math and std.regex: functions of their arguments (and, for time_now
// and math_random, of the clock or randomness), with no side effects.
var pureTools = map[string]handler{
	"time_now": timeNow, "time_format": timeFormat, "time_parse": timeParse, "time_add": timeAdd, "time_diff": timeDiff,

	"json_parse": jsonParse, "json_get": jsonGet, "json_stringify": jsonStringify, "json_validate": jsonValidate,

	"text_length": textOnly(textLength),
	"text_upper":  textOnly(func(s string) tool.Outcome { return ok(strings.ToUpper(s)) }),
	"text_lower":  textOnly(func(s string) tool.Outcome { return ok(strings.ToLower(s)) }),
	"text_trim":   textTrim, "text_replace": textReplace, "text_split": textSplit, "text_join": textJoin, "text_contains": textContains,

	"hash_sha256": hashSHA256, "hash_sha1": hashSHA1, "hash_md5": hashMD5,
	"base64_encode": base64Encode, "base64_decode": base64Decode,
	"hex_encode": textOnly(hexEncode), "hex_decode": textOnly(hexDecode),

	"math_calc": mathCalc, "math_random": mathRandom,

	"regex_match": regexMatchTool, "regex_find_all": regexFindAll, "regex_replace": regexReplace,
}
