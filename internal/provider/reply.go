package provider

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxReplyTokens bounds each token count a reply may report (input, output
// and total). No model has a context anywhere near it, so a larger count is
// a broken server, not a big reply; it is refused like a negative one,
// because budgets (--max-tokens) add up what servers report and a count
// that overflows or goes negative would let a run spend without limit.
const MaxReplyTokens = 100_000_000

// checkReply enforces the rules every provider's reply must satisfy before
// the runtime acts on it (docs/providers.md, "Bad replies"): it says
// something (text or calls), a finish that announces tool calls comes with
// calls, and the token counts are possible. toolFinish is the finish reason
// with which the protocol announces calls ("tool_calls", "tool_use"). The
// error is a transient KindBadReply, retried like a server hiccup.
func checkReply(r Reply, toolFinish string) error {
	calls := len(r.Message.ToolCalls)
	if toolFinish != "" && r.FinishReason == toolFinish && calls == 0 {
		return badReply("the reply's finish reason is %q but it carries no tool calls (a stream that lost its calls?)", r.FinishReason)
	}
	if calls == 0 && strings.TrimSpace(r.Message.Content) == "" {
		why := ""
		if r.FinishReason != "" {
			why = fmt.Sprintf(" (finish reason %q)", r.FinishReason)
		}
		return badReply("the model's reply is empty: no text and no tool calls%s", why)
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"input", r.Usage.InputTokens}, {"output", r.Usage.OutputTokens}, {"total", r.Usage.TotalTokens}} {
		if c.n < 0 || c.n > MaxReplyTokens {
			return badReply("the reply reports %d %s tokens, which is impossible (a count must be between 0 and %d)", c.n, c.name, MaxReplyTokens)
		}
	}
	return nil
}

// badReply builds the transient error of a reply that breaks the rules.
func badReply(format string, args ...any) *Error {
	return &Error{Kind: KindBadReply, Transient: true, Message: fmt.Sprintf(format, args...)}
}

// validUTF8JSON makes raw safe to store and print as JSON. Go's JSON
// scanner lets bytes that are not UTF-8 through inside strings, and
// re-encoding a RawMessage copies them, so a server's stray byte would make
// `runs show --json` unreadable to strict parsers. In valid JSON such bytes
// can only sit inside strings, where the escape \ufffd (the replacement
// character) is valid, so each run of them is replaced by it.
func validUTF8JSON(raw json.RawMessage) json.RawMessage {
	if utf8.Valid(raw) {
		return raw
	}
	return json.RawMessage(strings.ToValidUTF8(string(raw), `\ufffd`))
}
