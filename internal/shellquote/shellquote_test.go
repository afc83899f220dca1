package shellquote

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"review.nx":      "review.nx",
		"a b":            "'a b'",
		"":               "''",
		"it's":           `'it'\''s'`,
		"$HOME":          "'$HOME'",
		"x;rm -rf /":     "'x;rm -rf /'",
		"--store=a@b:5":  "--store=a@b:5",
		"naïve":          "'naïve'",
		"line\nbreak":    "'line\nbreak'",
		"back`tick`":     "'back`tick`'",
		"glob*?[a]":      "'glob*?[a]'",
		"tilde~":         "'tilde~'",
		"semi;colon&amp": "'semi;colon&amp'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestShellReadsItBack hands quoted words to a real shell and checks each
// arrives as the one argument it was.
func TestShellReadsItBack(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	words := []string{"plain", "a b", "", "it's", `"dq"`, "$HOME", "x;y", "new\nline", "*", `back\slash`}
	script := `for a in "$@"; do printf '%s\0' "$a"; done`
	out, err := exec.Command(sh, "-c", "set -- "+Join(words...)+"; "+script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	start := 0
	for i, b := range out {
		if b == 0 {
			got = append(got, string(out[start:i]))
			start = i + 1
		}
	}
	if len(got) != len(words) {
		t.Fatalf("shell read %d words, want %d: %q", len(got), len(words), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: shell read %q, want %q", i, got[i], words[i])
		}
	}
}
