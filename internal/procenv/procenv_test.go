package procenv

import (
	"strings"
	"testing"
)

func TestScrubMasksSecretValuesAndURLPasswordsInPlace(t *testing.T) {
	in := strings.Join([]string{
		"PATH=/usr/bin", "OPENAI_API_KEY=sk-canary-0001", "nexa_serve_token=tok-canary-02",
		"NEXA_STORE=postgres://app:pw-canary-03@db/app", "COPY=sk-canary-0001 again", "EMPTY_TOKEN=",
		"NEXA_IDEMPOTENCY_KEY=run_1:c1", "MALFORMED", "ANTHROPIC_API_KEY=x",
	}, "\x00") + "\x00"
	block := []byte(in)
	n := scrub(block)
	want := strings.Join([]string{
		"PATH=/usr/bin", "OPENAI_API_KEY=**************", "nexa_serve_token=*************",
		"NEXA_STORE=postgres://app:************@db/app", "COPY=************** again", "EMPTY_TOKEN=",
		"NEXA_IDEMPOTENCY_KEY=run_1:c1", "MALFORMED", "ANTHROPIC_API_KEY=*",
	}, "\x00") + "\x00"
	if string(block) != want {
		t.Fatalf("scrub:\n got %q\nwant %q", block, want)
	}
	if n != 14+13+12+14+1 {
		t.Errorf("scrub changed %d bytes", n)
	}
	if len(block) != len(in) {
		t.Errorf("the block changed length")
	}
	if scrub(block) != 0 {
		t.Errorf("a second scrub changed something")
	}
}

func TestEnvBoundsReadsFields50And51(t *testing.T) {
	fields := make([]string, 52)
	for i := range fields {
		fields[i] = "0"
	}
	fields[0], fields[1], fields[2] = "42", "(a) b (c))", "S"
	fields[49], fields[50] = "140737488347000", "140737488349000"
	start, end, err := envBounds([]byte(strings.Join(fields, " ") + "\n"))
	if err != nil || start != 140737488347000 || end != 140737488349000 {
		t.Fatalf("envBounds = %d, %d, %v", start, end, err)
	}
	for name, stat := range map[string]string{
		"no name":      "42 S 1 2",
		"too short":    "42 (nexa) S 1 2 3",
		"hidden":       strings.Replace(strings.Join(fields, " "), "140737488347000 140737488349000", "0 0", 1),
		"reversed":     strings.Replace(strings.Join(fields, " "), "140737488347000 140737488349000", "9 5", 1),
		"not a number": strings.Replace(strings.Join(fields, " "), "140737488347000", "x", 1),
	} {
		if _, _, err := envBounds([]byte(stat)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
