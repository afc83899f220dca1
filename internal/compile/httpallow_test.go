package compile

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/lang"
)

func TestAgentHTTPAllow(t *testing.T) {
	src := `agent A uses std.http {
    prompt: "p",
    http_allow: ["LOCALHOST:8080", "10.0.0.5", "[::1]:9000"]
}
agent B uses std.http { prompt: "p" }`
	p := mustBuild(t, src)
	if got := strings.Join(p.Agent("A").HTTPAllow, " "); got != "localhost:8080 10.0.0.5 [::1]:9000" {
		t.Errorf("HTTPAllow = %q", got)
	}
	if p.Agent("B").HTTPAllow != nil {
		t.Errorf("B allows %v", p.Agent("B").HTTPAllow)
	}
	// The setting is part of the IR, so changing it changes what a run
	// was started with (and its resume is refused).
	ir1 := CanonicalIR(p)
	ir2 := CanonicalIR(mustBuild(t, strings.Replace(src, "10.0.0.5", "10.0.0.6", 1)))
	if bytes.Equal(ir1, ir2) || !bytes.Contains(ir1, []byte("10.0.0.5")) {
		t.Error("http_allow is not part of the canonical IR")
	}

	errs := errorsOf(t, `agent A uses std.http {
    prompt: "p",
    http_allow: ["localhost", "http://10.0.0.5/", 8080, other: "x"]
}
agent B uses std.http { prompt: "p", http_allow: "localhost" }`)
	var msgs []string
	for _, d := range errs {
		if d.Code != lang.CodeBadSetting {
			t.Errorf("unexpected %s", d)
		}
		msgs = append(msgs, d.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`http_allow of agent A: "http://10.0.0.5/" is not a host or host:port`,
		"http_allow of agent A holds host strings, found the number 8080",
		"http_allow of agent A holds host strings",
		`http_allow of agent B must be a list of hosts, found the string "localhost"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q among:\n%s", want, all)
		}
	}
	if len(errs) != 4 {
		t.Errorf("want 4 errors, got:\n%s", dump(errs))
	}
}
