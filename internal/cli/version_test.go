package cli

import (
	"runtime/debug"
	"testing"
)

// A binary from `go install` carries no -X stamp; its version and commit
// come from what Go recorded, and the Makefile's stamp always wins.
func TestStampFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name             string
		version, commit  string
		info             *debug.BuildInfo
		wantVer, wantCom string
	}{
		{"no build info", "dev", "unknown", nil, "dev", "unknown"},
		{"checkout without vcs", "dev", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "unknown"},
		{"checkout", "dev", "unknown",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")},
			"dev", "0123456789ab"},
		{"dirty checkout", "dev", "unknown",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc1234", "true")},
			"dev", "abc1234-dirty"},
		{"go install at a tag", "dev", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3", "unknown"},
		{"make stamp wins", "v2.0.0", "deadbee",
			&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("0123456789abcdef", "true")},
			"v2.0.0", "deadbee"},
	}
	for _, c := range cases {
		v, com := stampFrom(c.version, c.commit, c.info)
		if v != c.wantVer || com != c.wantCom {
			t.Errorf("%s: got (%q, %q), want (%q, %q)", c.name, v, com, c.wantVer, c.wantCom)
		}
	}
}
