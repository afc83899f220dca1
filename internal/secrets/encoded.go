package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
)

// minEncodedLen is the shortest base64 text the Redactor replaces. A
// shorter fragment (the base64 of a 4- or 5-byte value without padding,
// or its middle inside a longer text) turns up by chance in ordinary
// base64 data such as an image a tool returns, and redacting it there
// would corrupt that data while protecting a value too short to matter.
const minEncodedLen = 8

// base64Encodings are the alphabets a value may be encoded in: standard
// and URL-safe, each with and without padding.
var base64Encodings = []*base64.Encoding{
	base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding,
}

// encodedForms returns the ways a tool or a model could pass v on without
// writing it as is: hexadecimal (lower and upper case), URL escapes (query
// and path, with upper- and lower-case percent digits), and base64 (both
// alphabets, padded and not). A value inside a longer text that is then
// base64-encoded does not appear as base64(v): each base64 character holds
// six bits, so what v contributes depends on where v starts modulo three
// bytes. For each of the three offsets the characters whose bits all come
// from v are the same whatever surrounds it; those fragments are returned
// too, so base64("token=" + v + "&x=1") is caught as well.
func encodedForms(v string) []string {
	b := []byte(v)
	h := hex.EncodeToString(b)
	out := []string{h, strings.ToUpper(h)}
	for _, esc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		if esc != v {
			out = append(out, esc, lowerPercent(esc))
		}
	}
	var b64 []string
	for _, enc := range base64Encodings {
		b64 = append(b64, enc.EncodeToString(b))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := range 3 {
			text := enc.EncodeToString(append(make([]byte, k), b...))
			// Characters lo..hi-1 cover bits 8k..8(k+len(v)) exactly:
			// the first starts at or after v's first bit, the last ends
			// at or before its last.
			lo, hi := (8*k+5)/6, 8*(k+len(b))/6
			b64 = append(b64, text[lo:hi])
		}
	}
	for _, s := range b64 {
		if len(s) >= minEncodedLen {
			out = append(out, s)
		}
	}
	return out
}

// lowerPercent returns s with the hex digits of its %XX escapes in lower
// case, as some encoders write them.
func lowerPercent(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		sb.WriteByte(s[i])
		if s[i] == '%' && i+2 < len(s) {
			sb.WriteString(strings.ToLower(s[i+1 : i+3]))
			i += 2
		}
	}
	return sb.String()
}
