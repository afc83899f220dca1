package tailbuf

import (
	"strings"
	"testing"
)

func TestKeepsTheLastBytesAcrossWrites(t *testing.T) {
	b := New(8)
	for _, w := range []string{"0123456789", "ab", "c", "", "de\n"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
		}
	}
	if got := b.String(); got != "89abcde\n" {
		t.Errorf("String() = %q, want %q", got, "89abcde\n")
	}
	if got := b.Total(); got != 16 {
		t.Errorf("Total() = %d, want 16", got)
	}
}

func TestKeepsEverythingUnderTheLimit(t *testing.T) {
	b := New(100)
	_, _ = b.Write([]byte("short "))
	_, _ = b.Write([]byte("output"))
	if got := b.String(); got != "short output" {
		t.Errorf("String() = %q", got)
	}
}

func TestManySmallWritesStayBounded(t *testing.T) {
	b := New(10)
	for i := 0; i < 1000; i++ {
		_, _ = b.Write([]byte{byte('a' + i%26)})
		if len(b.buf) > 20 {
			t.Fatalf("after %d writes the buffer holds %d bytes, more than twice its limit", i+1, len(b.buf))
		}
	}
	want := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40)[990:1000]
	if got := b.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestBytesIsACopy(t *testing.T) {
	b := New(4)
	_, _ = b.Write([]byte("abcd"))
	got := b.Bytes()
	got[0] = 'X'
	if s := b.String(); s != "abcd" {
		t.Errorf("changing Bytes' result changed the buffer: %q", s)
	}
}

func TestZeroLimitKeepsNothingButCounts(t *testing.T) {
	var b Buffer
	if n, err := b.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b.String() != "" || b.Total() != 3 {
		t.Errorf("zero Buffer: String %q, Total %d", b.String(), b.Total())
	}
}
