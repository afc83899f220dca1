package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// key is a provider key with the characters that URL escaping and the two
// base64 alphabets treat differently.
const key = "sk-live/Ab+c?d=e&f g~0123456789"

func assertRedacted(t *testing.T, r *Redactor, form, text, secretForm string) {
	t.Helper()
	got := r.Redact(text)
	if strings.Contains(got, secretForm) || !strings.Contains(got, redacted) {
		t.Errorf("%s: %q redacted to %q", form, text, got)
	}
}

func TestRedactorCatchesHexAndURLEncodings(t *testing.T) {
	r := NewRedactor(key)
	h := hex.EncodeToString([]byte(key))
	q, p := url.QueryEscape(key), url.PathEscape(key)
	for form, enc := range map[string]string{
		"hex lower":        h,
		"hex upper":        strings.ToUpper(h),
		"query escape":     q,
		"path escape":      p,
		"query lower-case": lowerEscapes(q),
		"path lower-case":  lowerEscapes(p),
	} {
		assertRedacted(t, r, form, "before "+enc+" after", enc)
		assertRedacted(t, r, form+" in a URL", "https://api.example/v1?key="+enc+"&x=1", enc)
	}
}

// lowerEscapes writes every %XX escape of s with lower-case digits.
func lowerEscapes(s string) string {
	return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
}

func TestRedactorCatchesBase64InBothAlphabetsPaddedOrNot(t *testing.T) {
	for _, v := range []string{key, key + "x", key + "xy"} { // three padding lengths
		r := NewRedactor(v)
		for name, enc := range map[string]*base64.Encoding{
			"std": base64.StdEncoding, "url": base64.URLEncoding, "raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding,
		} {
			e := enc.EncodeToString([]byte(v))
			got := r.Redact("token: " + e + "\n")
			if got != "token: "+redacted+"\n" {
				t.Errorf("%s base64 of a %d-byte value: got %q", name, len(v), got)
			}
		}
	}
}

// A value inside a longer text that is then base64-encoded starts at any
// of three alignments; each is caught, whatever surrounds the value, and
// nothing that identifies the value remains.
func TestRedactorCatchesBase64OfATextContainingTheValue(t *testing.T) {
	r := NewRedactor(key)
	for _, prefix := range []string{"", "a", "ab", "abc", "Authorization: Bearer ", `{"api_key":"`} {
		for _, suffix := range []string{"", "!", "\"}", " and more text"} {
			for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding} {
				text := enc.EncodeToString([]byte(prefix + key + suffix))
				got := r.Redact(text)
				if !strings.Contains(got, redacted) {
					t.Errorf("%s, prefix %q suffix %q: not redacted: %q", name, prefix, suffix, got)
				}
				// No run of 6 characters that encodes only key bits is left.
				lo, hi := (8*len(prefix)+5)/6, 8*(len(prefix)+len(key))/6
				for i := lo; i+6 <= hi; i++ {
					if strings.Contains(got, text[i:i+6]) {
						t.Errorf("%s, prefix %q suffix %q: %q of the key's encoding survives in %q", name, prefix, suffix, text[i:i+6], got)
					}
				}
			}
		}
	}
}

// Short values keep the MinRedactLen rule, encodings included, and a
// base64 fragment shorter than minEncodedLen is not a needle: it would
// match ordinary base64 data by chance.
func TestRedactorEncodingsKeepTheLengthRules(t *testing.T) {
	r := NewRedactor("abc")
	for _, text := range []string{"616263", "YWJj", "abc"} {
		if got := r.Redact(text); got != text {
			t.Errorf("a value shorter than MinRedactLen redacted in %q: %q", text, got)
		}
	}
	r = NewRedactor("abcd")
	if got := r.Redact("61626364 YWJjZA=="); got != redacted+" "+redacted {
		t.Errorf("a 4-byte value's hex and padded base64: %q", got)
	}
	// Its unpadded base64 and fragments are shorter than 8 characters.
	if got := r.Redact("YWJjZA xYWJjZA"); got != "YWJjZA xYWJjZA" {
		t.Errorf("a short base64 fragment redacted: %q", got)
	}
	for _, n := range needles([]string{"abcd", key}) {
		if len(n) < MinRedactLen {
			t.Errorf("needle shorter than MinRedactLen: %q", n)
		}
	}
}

// A stream is redacted too when the encoded secret arrives in pieces.
func TestRedactorWriterCatchesAnEncodedSecretSplitAcrossWrites(t *testing.T) {
	r := NewRedactor(key)
	var out strings.Builder
	w := r.Writer(&out)
	e := base64.StdEncoding.EncodeToString([]byte(key))
	for _, p := range []string{"b64 " + e[:5], e[5:17], e[17:] + "\n"} {
		_, _ = w.Write([]byte(p))
		if strings.Contains(out.String(), e[:8]) {
			t.Fatalf("part of the encoded secret forwarded: %q", out.String())
		}
	}
	_ = w.Close()
	if out.String() != "b64 "+redacted+"\n" {
		t.Fatalf("got %q", out.String())
	}
}
