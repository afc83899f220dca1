package policy

import (
	"strings"
	"sync"
	"testing"
)

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse("p.toml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// decide is a shorthand: the decision and rule for one call.
func decide(p *Policy, tool, risk, args string) (Decision, string) {
	v := p.Decide(Call{Tool: tool, Risk: risk, Args: []byte(args)})
	return v.Decision, v.Rule
}

func expect(t *testing.T, p *Policy, tool, risk, args string, want Decision, wantRule string) {
	t.Helper()
	got, rule := decide(p, tool, risk, args)
	if got != want || rule != wantRule {
		t.Errorf("Decide(%s, %s, %s) = %q by %q, want %q by %q", tool, risk, args, got, rule, want, wantRule)
	}
}

const deploys = `
[[rule]]
name = "staging-deploys"
tool = "deploy"
decision = "allow"
reason = "staging is routine"
[rule.args]
env = "staging"

[[rule]]
name = "production-deploys"
tool = "deploy"
decision = "deny"
reason = "production deploys go through the release train"
[rule.args]
env = "production"
`

func TestIssueExampleAllowsStagingAndDeniesProduction(t *testing.T) {
	p := mustParse(t, deploys)
	v := p.Decide(Call{Tool: "deploy", Risk: "high", Args: []byte(`{"env": "staging", "tag": "v1"}`)})
	if v.Decision != Allow || v.Rule != "staging-deploys" || v.Reason != "staging is routine" || v.Capped {
		t.Fatalf("staging: %+v", v)
	}
	if v.Why != `rule staging-deploys matched: tool is "deploy", argument env is "staging".` {
		t.Errorf("Why = %q", v.Why)
	}
	v = p.Decide(Call{Tool: "deploy", Risk: "high", Args: []byte(`{"env": "production"}`)})
	if v.Decision != Deny || v.Reason != "production deploys go through the release train" {
		t.Fatalf("production: %+v", v)
	}
	// anything else: no verdict, the tool's own setting applies
	expect(t, p, "deploy", "high", `{"env": "qa"}`, "", "")
	expect(t, p, "deploy", "high", `{}`, "", "")
	expect(t, p, "publish", "high", `{"env": "staging"}`, "", "")
}

func TestNilPolicyAndNoMatch(t *testing.T) {
	var p *Policy
	if v := p.Decide(Call{Tool: "deploy"}); v != (Verdict{}) {
		t.Errorf("nil policy: %+v", v)
	}
	if p.Hash() != "" || p.Path() != "" || p.Rules() != 0 || p.AllowCritical() {
		t.Error("nil policy accessors")
	}
	v := mustParse(t, deploys).Decide(Call{Tool: "other"})
	if v.Decision != "" || v.Rule != "" || !strings.Contains(v.Why, "no rule matches") {
		t.Errorf("no match: %+v", v)
	}
}

func TestToolGlobs(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "github"
tool = "github_*"
decision = "ask"
[[rule]]
name = "one-char"
tool = "fs_?"
decision = "allow"
[[rule]]
name = "class"
tool = ["read_[a-c]", "list_[!x]"]
decision = "allow"
[[rule]]
name = "literal-star"
tool = 'odd\*name'
decision = "deny"
reason = "r"
[[rule]]
name = "everything-else"
tool = "*"
decision = "ask"
`)
	expect(t, p, "github_create_issue", "low", `{}`, Ask, "github")
	expect(t, p, "github_", "low", `{}`, Ask, "github")
	expect(t, p, "fs_a", "low", `{}`, Allow, "one-char")
	expect(t, p, "fs_ab", "low", `{}`, Ask, "everything-else")
	expect(t, p, "read_b", "low", `{}`, Allow, "class")
	expect(t, p, "read_d", "low", `{}`, Ask, "everything-else")
	expect(t, p, "list_y", "low", `{}`, Allow, "class")
	expect(t, p, "list_x", "low", `{}`, Ask, "everything-else")
	expect(t, p, "odd*name", "low", `{}`, Deny, "literal-star")
	expect(t, p, "oddXname", "low", `{}`, Ask, "everything-else")
	// names are case-sensitive and the whole name must match
	expect(t, p, "GitHub_x", "low", `{}`, Ask, "everything-else")
	expect(t, p, "my_github_x", "low", `{}`, Ask, "everything-else")
}

func TestRiskLevels(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "risky"
tool = "*"
risk = ["high", "critical"]
decision = "deny"
reason = "not from CI"
[[rule]]
name = "low"
tool = "*"
risk = "low"
decision = "allow"
`)
	expect(t, p, "x", "high", `{}`, Deny, "risky")
	expect(t, p, "x", "critical", `{}`, Deny, "risky")
	expect(t, p, "x", "low", `{}`, Allow, "low")
	expect(t, p, "x", "medium", `{}`, "", "")
	expect(t, p, "x", "", `{}`, "", "")
	v := p.Decide(Call{Tool: "x", Risk: "high"})
	if !strings.Contains(v.Why, "risk high is one of high, critical") {
		t.Errorf("Why = %q", v.Why)
	}
}

func TestEqualityKeepsTypesApart(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "n"
tool = "t"
decision = "allow"
[rule.args]
count = 5
[[rule]]
name = "s"
tool = "t"
decision = "allow"
[rule.args]
count = "5"
[[rule]]
name = "b"
tool = "t"
decision = "allow"
[rule.args]
dry_run = true
[[rule]]
name = "f"
tool = "t"
decision = "allow"
[rule.args]
ratio = 0.1
`)
	expect(t, p, "t", "low", `{"count": 5}`, Allow, "n")
	expect(t, p, "t", "low", `{"count": 5.0}`, Allow, "n")
	expect(t, p, "t", "low", `{"count": 5e0}`, Allow, "n")
	expect(t, p, "t", "low", `{"count": 0.5E1}`, Allow, "n")
	expect(t, p, "t", "low", `{"count": "5"}`, Allow, "s")
	expect(t, p, "t", "low", `{"count": 5.000000000000001}`, "", "")
	expect(t, p, "t", "low", `{"count": [5]}`, "", "")
	expect(t, p, "t", "low", `{"dry_run": true}`, Allow, "b")
	expect(t, p, "t", "low", `{"dry_run": "true"}`, "", "")
	expect(t, p, "t", "low", `{"dry_run": false}`, "", "")
	expect(t, p, "t", "low", `{"ratio": 0.1}`, Allow, "f")
	expect(t, p, "t", "low", `{"ratio": 1e-1}`, Allow, "f")
	expect(t, p, "t", "low", `{"ratio": 0.10000000000000001}`, "", "")
	expect(t, p, "t", "low", `{"count": null}`, "", "")
}

func TestInGlobRegex(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "in"
tool = "a"
decision = "allow"
[rule.args]
env = { in = ["dev", "qa", 3] }
[[rule]]
name = "glob"
tool = "b"
decision = "allow"
[rule.args]
branch = { glob = "release/*" }
[[rule]]
name = "regex"
tool = "c"
decision = "allow"
[rule.args]
tag = { regex = 'v[0-9]+\.[0-9]+' }
[[rule]]
name = "both"
tool = "d"
decision = "allow"
[rule.args]
path = { glob = "/tmp/*", regex = '.*\.log' }
`)
	expect(t, p, "a", "low", `{"env": "qa"}`, Allow, "in")
	expect(t, p, "a", "low", `{"env": 3}`, Allow, "in")
	expect(t, p, "a", "low", `{"env": "prod"}`, "", "")
	expect(t, p, "a", "low", `{"env": "3"}`, "", "")

	// * crosses / and the whole value must match
	expect(t, p, "b", "low", `{"branch": "release/1.2/hotfix"}`, Allow, "glob")
	expect(t, p, "b", "low", `{"branch": "release/"}`, Allow, "glob")
	expect(t, p, "b", "low", `{"branch": "x/release/1"}`, "", "")
	expect(t, p, "b", "low", `{"branch": 7}`, "", "")

	// regular expressions are anchored at both ends
	expect(t, p, "c", "low", `{"tag": "v1.2"}`, Allow, "regex")
	expect(t, p, "c", "low", `{"tag": "v1.2-rc"}`, "", "")
	expect(t, p, "c", "low", `{"tag": "xv1.2"}`, "", "")
	expect(t, p, "c", "low", `{"tag": "v1.2\nrm -rf /"}`, "", "")

	// every test of a condition must hold
	expect(t, p, "d", "low", `{"path": "/tmp/a/b.log"}`, Allow, "both")
	expect(t, p, "d", "low", `{"path": "/tmp/a/b.txt"}`, "", "")
	expect(t, p, "d", "low", `{"path": "/var/b.log"}`, "", "")
}

func TestNumericRanges(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "small"
tool = "scale"
decision = "allow"
[rule.args]
replicas = { min = 1, max = 5 }
[[rule]]
name = "refund"
tool = "refund"
decision = "allow"
[rule.args]
amount = { max = 100.5 }
[[rule]]
name = "above"
tool = "temp"
decision = "deny"
reason = "too cold"
[rule.args]
celsius = { max = -10 }
`)
	for _, ok := range []string{"1", "5", "3", "1.0", "4.99", "5e0", "0.5e1"} {
		expect(t, p, "scale", "low", `{"replicas": `+ok+`}`, Allow, "small")
	}
	for _, no := range []string{"0", "5.0001", "6", "-3", `"3"`, "true", "1e999999999", "10000000000000000000000"} {
		expect(t, p, "scale", "low", `{"replicas": `+no+`}`, "", "")
	}
	expect(t, p, "refund", "low", `{"amount": 100.5}`, Allow, "refund")
	expect(t, p, "refund", "low", `{"amount": 100.50000000000000001}`, "", "")
	expect(t, p, "refund", "low", `{"amount": -1e999999999}`, Allow, "refund")
	expect(t, p, "temp", "low", `{"celsius": -10}`, Deny, "above")
	expect(t, p, "temp", "low", `{"celsius": -9.5}`, "", "")
	expect(t, p, "temp", "low", `{"celsius": -0.11e3}`, Deny, "above")
	v := p.Decide(Call{Tool: "scale", Args: []byte(`{"replicas": 2}`)})
	if !strings.Contains(v.Why, "argument replicas is within [1, 5]") {
		t.Errorf("Why = %q", v.Why)
	}
}

func TestIntegersCompareExactly(t *testing.T) {
	// 2^53+1 is not a float64; it must still be above a max of 2^53
	p := mustParse(t, `
[[rule]]
name = "cap"
tool = "pay"
decision = "allow"
[rule.args]
cents = { max = 9007199254740992 }
`)
	expect(t, p, "pay", "low", `{"cents": 9007199254740992}`, Allow, "cap")
	expect(t, p, "pay", "low", `{"cents": 9007199254740993}`, "", "")
}

func TestJSONPointers(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "nested"
tool = "k8s"
decision = "deny"
reason = "no production namespace"
[rule.pointers]
"/metadata/namespace" = "production"
[[rule]]
name = "array"
tool = "k8s"
decision = "allow"
[rule.pointers]
"/containers/0/image" = { glob = "registry.local/*" }
"/spec/replicas" = { max = 3 }
[[rule]]
name = "escapes"
tool = "odd"
decision = "allow"
[rule.pointers]
"/a~1b/c~0d" = 1
`)
	expect(t, p, "k8s", "low", `{"metadata": {"namespace": "production"}}`, Deny, "nested")
	expect(t, p, "k8s", "low", `{"metadata": {"namespace": "dev"}, "containers": [{"image": "registry.local/app"}], "spec": {"replicas": 2}}`, Allow, "array")
	expect(t, p, "k8s", "low", `{"containers": [{"image": "docker.io/app"}], "spec": {"replicas": 2}}`, "", "")
	expect(t, p, "k8s", "low", `{"containers": [{"image": "registry.local/app"}], "spec": {"replicas": 4}}`, "", "")
	expect(t, p, "k8s", "low", `{"containers": [], "spec": {"replicas": 2}}`, "", "")
	expect(t, p, "k8s", "low", `{"containers": {"0": {"image": "registry.local/app"}}, "spec": {"replicas": 2}}`, Allow, "array")
	expect(t, p, "k8s", "low", `{"metadata": "production"}`, "", "")
	expect(t, p, "odd", "low", `{"a/b": {"c~d": 1}}`, Allow, "escapes")
	expect(t, p, "odd", "low", `{"a": {"b": {"c~d": 1}}}`, "", "")

	// array indexes: digits only, no leading zero, "-" names nothing
	q := mustParse(t, `
[[rule]]
name = "lead"
tool = "t"
decision = "allow"
[rule.pointers]
"/xs/01" = 1
[[rule]]
name = "dash"
tool = "t"
decision = "allow"
[rule.pointers]
"/xs/-" = 1
`)
	expect(t, q, "t", "low", `{"xs": [1, 1]}`, "", "")
	v := q.Decide(Call{Tool: "t", Args: []byte(`{"xs": [1, 1]}`)})
	if v.Decision != "" {
		t.Errorf("%+v", v)
	}
}

func TestFirstMatchWinsInFileOrder(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "deny-prod"
tool = "deploy"
decision = "deny"
reason = "not production"
[rule.args]
env = "production"
[[rule]]
name = "allow-deploys"
tool = "deploy"
decision = "allow"
[[rule]]
name = "never-reached"
tool = "deploy"
decision = "deny"
reason = "r"
`)
	expect(t, p, "deploy", "low", `{"env": "production"}`, Deny, "deny-prod")
	expect(t, p, "deploy", "low", `{"env": "staging"}`, Allow, "allow-deploys")
	expect(t, p, "deploy", "low", `{}`, Allow, "allow-deploys")
}

func TestAllConditionsOfARuleMustHold(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "r"
tool = "deploy"
risk = "medium"
decision = "allow"
[rule.args]
env = "staging"
region = { glob = "eu-*" }
[rule.pointers]
"/opts/force" = false
`)
	good := `{"env": "staging", "region": "eu-west", "opts": {"force": false}}`
	expect(t, p, "deploy", "medium", good, Allow, "r")
	expect(t, p, "deploy", "high", good, "", "")
	expect(t, p, "deploy", "medium", `{"env": "staging", "region": "us-east", "opts": {"force": false}}`, "", "")
	expect(t, p, "deploy", "medium", `{"env": "staging", "region": "eu-west", "opts": {"force": true}}`, "", "")
	expect(t, p, "deploy", "medium", `{"env": "staging", "region": "eu-west"}`, "", "")
}

func TestCriticalToolsAreNeverAllowedWithoutAllowCritical(t *testing.T) {
	rules := `
[[rule]]
name = "db"
tool = "drop_*"
decision = "allow"
reason = "the nightly cleanup"
[[rule]]
name = "deny-wipe"
tool = "wipe"
decision = "deny"
reason = "never"
[[rule]]
name = "ask-any"
tool = "*"
decision = "ask"
`
	p := mustParse(t, rules)
	if p.AllowCritical() {
		t.Fatal("AllowCritical without the setting")
	}
	v := p.Decide(Call{Tool: "drop_table", Risk: "critical", Args: []byte(`{}`)})
	if v.Decision != Ask || !v.Capped || v.Rule != "db" || v.Reason != "the nightly cleanup" {
		t.Fatalf("critical under allow: %+v", v)
	}
	if !strings.Contains(v.Why, "critical") || !strings.Contains(v.Why, "allow_critical") {
		t.Errorf("Why does not say why it was capped: %q", v.Why)
	}
	// the same rule allows a tool that is not critical
	v = p.Decide(Call{Tool: "drop_table", Risk: "high", Args: []byte(`{}`)})
	if v.Decision != Allow || v.Capped {
		t.Errorf("high under allow: %+v", v)
	}
	// deny and ask are never capped
	if v := p.Decide(Call{Tool: "wipe", Risk: "critical"}); v.Decision != Deny || v.Capped {
		t.Errorf("deny: %+v", v)
	}
	if v := p.Decide(Call{Tool: "other", Risk: "critical"}); v.Decision != Ask || v.Capped {
		t.Errorf("ask: %+v", v)
	}

	// said explicitly at the top level, critical tools may be allowed
	q := mustParse(t, "allow_critical = true\n"+rules)
	if !q.AllowCritical() {
		t.Fatal("AllowCritical")
	}
	if v := q.Decide(Call{Tool: "drop_table", Risk: "critical"}); v.Decision != Allow || v.Capped {
		t.Errorf("with allow_critical: %+v", v)
	}
	// false is the same as absent
	r := mustParse(t, "allow_critical = false\n"+rules)
	if v := r.Decide(Call{Tool: "drop_table", Risk: "critical"}); v.Decision != Ask || !v.Capped {
		t.Errorf("allow_critical = false: %+v", v)
	}
}

func TestUnreadableArgumentsStopAtTheFirstRuleThatNeedsThem(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "tool-only"
tool = "ping"
decision = "allow"
[[rule]]
name = "deny-prod"
tool = "deploy"
decision = "deny"
reason = "not production"
[rule.args]
env = "production"
[[rule]]
name = "allow-rest"
tool = "deploy"
decision = "allow"
`)
	for _, args := range []string{
		`{"env": "staging", "env": "production"}`, // a name twice
		`{"a": {"x": 1, "x": 2}}`,                 // a name twice, nested
		`["env", "production"]`,                   // not an object
		`null`,
		`{"env": "production"} {}`, // data after it
		`{"env": `,                 // cut short
		`not json`,
	} {
		v := p.Decide(Call{Tool: "deploy", Args: []byte(args)})
		if v.Decision != "" || !strings.Contains(v.Why, "cannot be read") {
			t.Errorf("%s: %+v", args, v)
		}
	}
	// rules that do not look at the arguments still decide
	expect(t, p, "ping", "low", `{"a": 1, "a": 2}`, Allow, "tool-only")
	// no arguments at all are an empty object
	expect(t, p, "deploy", "low", ``, Allow, "allow-rest")
	expect(t, p, "deploy", "low", ` `, Allow, "allow-rest")
}

func TestWhyQuotesThePolicyNotTheArguments(t *testing.T) {
	p := mustParse(t, `
[[rule]]
name = "r"
tool = "send"
decision = "allow"
[rule.args]
to = { glob = "*@example.com" }
`)
	v := p.Decide(Call{Tool: "send", Args: []byte(`{"to": "sk-secret-value@example.com"}`)})
	if v.Decision != Allow || strings.Contains(v.Why, "sk-secret") {
		t.Errorf("%+v", v)
	}
	if !strings.Contains(v.Why, `argument to matches glob "*@example.com"`) {
		t.Errorf("Why = %q", v.Why)
	}
}

func TestDecideIsSafeForConcurrentUse(t *testing.T) {
	p := mustParse(t, deploys)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if d, _ := decide(p, "deploy", "low", `{"env": "staging"}`); d != Allow {
					errs <- "staging not allowed"
					return
				}
				if d, _ := decide(p, "deploy", "low", `{"env": "production"}`); d != Deny {
					errs <- "production not denied"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestDecimalCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"0", "-0", 0}, {"0.0", "0e5", 0}, {"1", "1.0", 0}, {"10", "1e1", 0},
		{"1", "2", -1}, {"-1", "-2", 1}, {"0.5", "0.49999", 1}, {"100", "99.999", 1},
		{"1e-7", "0", 1}, {"-1e-7", "0", -1}, {"123.45", "1.2345e2", 0},
		{"1e1000000000000000", "1e999999999", 1}, {"1e1000000000000000", "1e2000000000000000", 0}, // both saturate
		{"1e999999999", "1e308", 1}, {"-1e999999999", "-1e308", -1}, {"1e-999999999", "0", 1},
	}
	for _, c := range cases {
		a, ok1 := parseDecimal(c.a)
		b, ok2 := parseDecimal(c.b)
		if !ok1 || !ok2 {
			t.Fatalf("parse %s %s", c.a, c.b)
		}
		if got := a.cmp(b); got != c.want {
			t.Errorf("cmp(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	for _, bad := range []string{"", "-", ".", "1e", "1e+", "x", "1.2.3", "0x10"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) accepted", bad)
		}
	}
}
