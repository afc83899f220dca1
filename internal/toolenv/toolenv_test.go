package toolenv

import (
	"reflect"
	"testing"
)

var environ = []string{
	"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TERM=xterm",
	"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LANGUAGE=en", "TMPDIR=/tmp/x", "TZ=UTC",
	"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/etc/ca.pem",
	"NEXA_API_KEY=sk-nexa", "OPENAI_API_KEY=sk-openai", "ANTHROPIC_API_KEY=sk-ant", "DEEPSEEK_API_KEY=sk-ds",
	"GITHUB_TOKEN=ghp", "AWS_SECRET_ACCESS_KEY=aws", "PGPASSWORD=pg", "DATABASE_URL=postgres://u:p@h/db",
	"NEXA_STORE=/x", "NEXA_SECRETS=/s.nxs", "NEXA_RUN_ID=stale", "PYTHONPATH=/lib", "LD_PRELOAD=/evil.so",
	"MALFORMED", "LANGX=1", "lc_all=no",
}

func TestMCPGetsTheSDKDefaultsAndLocaleOnly(t *testing.T) {
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TERM=xterm",
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LANGUAGE=en"}
	if got := MCP(environ); !reflect.DeepEqual(got, want) {
		t.Fatalf("MCP:\n got %q\nwant %q", got, want)
	}
}

func TestToolsGetTheLeastEnvironment(t *testing.T) {
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TERM=xterm",
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LANGUAGE=en", "TMPDIR=/tmp/x", "TZ=UTC",
		"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/etc/ca.pem"}
	if got := Tool(environ); !reflect.DeepEqual(got, want) {
		t.Fatalf("Tool:\n got %q\nwant %q", got, want)
	}
	if got := Tool(nil); got == nil || len(got) != 0 {
		t.Fatalf("Tool(nil) = %#v, want an empty, non-nil list (nil would mean inherit everything to os/exec)", got)
	}
}
