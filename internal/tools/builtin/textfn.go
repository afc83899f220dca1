package builtin

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"github.com/nexa-run/nexa/internal/tool"
	"hash"
	"strings"
	"unicode"
	"unicode/utf8"
)

// textArg is the argument shape shared by the one-string tools.
type textArg struct {
	Text string `json:"text"`
}

func textOnly(f func(string) tool.Outcome) handler {
	return func(_ context.Context, c *call) (tool.Outcome, error) {
		var a textArg
		if err := c.decode(&a); err != nil {
			return argError(err), nil
		}
		return f(a.Text), nil
	}
}

func textLength(s string) tool.Outcome {
	lines := 0
	if s != "" {
		lines = strings.Count(s, "\n") + 1
		if strings.HasSuffix(s, "\n") {
			lines--
		}
	}
	return okJSON(map[string]int{
		"characters": utf8.RuneCountInString(s),
		"bytes":      len(s),
		"words":      len(strings.Fields(s)),
		"lines":      lines,
	})
}

func textTrim(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Text       string  `json:"text"`
		Characters *string `json:"characters"`
		Side       string  `json:"side"`
	}{Side: "both"}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	left, right := strings.TrimLeftFunc, strings.TrimRightFunc
	cut := unicode.IsSpace
	if a.Characters != nil && *a.Characters != "" {
		set := *a.Characters
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	s := a.Text
	switch a.Side {
	case "", "both":
		s = right(left(s, cut), cut)
	case "left":
		s = left(s, cut)
	case "right":
		s = right(s, cut)
	default:
		return fail("side must be both, left or right"), nil
	}
	return ok(s), nil
}

func textReplace(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text  string `json:"text"`
		Old   string `json:"old"`
		New   string `json:"new"`
		Count *int   `json:"count"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if a.Old == "" {
		return fail("old must not be empty"), nil
	}
	n := -1
	if a.Count != nil {
		if *a.Count < 1 {
			return fail("count must be at least 1"), nil
		}
		n = *a.Count
	}
	return ok(strings.Replace(a.Text, a.Old, a.New, n)), nil
}

func textSplit(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Text      string `json:"text"`
		Separator string `json:"separator"`
		Limit     *int   `json:"limit"`
	}{Separator: "\n"}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	n := -1
	if a.Limit != nil {
		if *a.Limit < 1 {
			return fail("limit must be at least 1"), nil
		}
		n = *a.Limit
	}
	parts := strings.SplitN(a.Text, a.Separator, n)
	if parts == nil {
		parts = []string{}
	}
	return okJSON(map[string]any{"parts": parts, "count": len(parts)}), nil
}

func textJoin(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Parts     []string `json:"parts"`
		Separator string   `json:"separator"`
	}{Separator: "\n"}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	return ok(strings.Join(a.Parts, a.Separator)), nil
}

func textContains(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text       string `json:"text"`
		Substring  string `json:"substring"`
		IgnoreCase bool   `json:"ignore_case"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if a.Substring == "" {
		return fail("substring must not be empty"), nil
	}
	text, sub := a.Text, a.Substring
	if a.IgnoreCase {
		// Case folding can change byte lengths, so positions are
		// counted on the folded text, character by character.
		text, sub = foldCase(text), foldCase(sub)
	}
	count := strings.Count(text, sub)
	index := -1
	if i := strings.Index(text, sub); i >= 0 {
		index = utf8.RuneCountInString(text[:i])
	}
	return okJSON(map[string]any{"contains": count > 0, "count": count, "index": index}), nil
}

// foldCase maps each character to its simple lower-case fold, keeping one
// character per character so character positions stay valid.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
}

// ---------------------------------------------------------------- std.hash

func digestTool(newHash func() hash.Hash) handler {
	return func(_ context.Context, c *call) (tool.Outcome, error) {
		a := struct {
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		}{Encoding: "hex"}
		if err := c.decode(&a); err != nil {
			return argError(err), nil
		}
		h := newHash()
		h.Write([]byte(a.Text))
		sum := h.Sum(nil)
		switch a.Encoding {
		case "", "hex":
			return ok(hex.EncodeToString(sum)), nil
		case "base64":
			return ok(base64.StdEncoding.EncodeToString(sum)), nil
		default:
			return fail("encoding must be hex or base64"), nil
		}
	}
}

var (
	hashSHA256 = digestTool(sha256.New)
	hashSHA1   = digestTool(sha1.New)
	hashMD5    = digestTool(md5.New)
)

func base64Encode(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text    string `json:"text"`
		URLSafe bool   `json:"url_safe"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	enc := base64.StdEncoding
	if a.URLSafe {
		enc = base64.RawURLEncoding
	}
	return ok(enc.EncodeToString([]byte(a.Text))), nil
}

// decodedText returns decoded bytes as text, or explains why they are not.
func decodedText(b []byte) tool.Outcome {
	if !utf8.Valid(b) {
		shown := b
		if len(shown) > 1024 {
			shown = shown[:1024]
		}
		return fail("the decoded %d bytes are not UTF-8 text; in hex: %s", len(b), hex.EncodeToString(shown))
	}
	return ok(string(b))
}

func base64Decode(_ context.Context, c *call) (tool.Outcome, error) {
	var a textArg
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	s := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, a.Text)
	var lastErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			return decodedText(b), nil
		}
		lastErr = err
	}
	return fail("not valid base64: %v", lastErr), nil
}

func hexEncode(s string) tool.Outcome { return ok(hex.EncodeToString([]byte(s))) }

func hexDecode(s string) tool.Outcome {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil {
		return fail("not valid hex: %v", err)
	}
	return decodedText(b)
}
