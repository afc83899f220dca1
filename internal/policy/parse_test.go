package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStrictErrors: every mistake is an error naming the file and line,
// so that no typo can quietly switch a rule off.
func TestStrictErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // each a whole error line
	}{
		{"unknown top-level key", `
allow_criticl = true
[[rule]]
name = "a"
tool = "t"
decision = "allow"
`, []string{`p.toml:2: unknown key "allow_criticl" at the top level (did you mean "allow_critical"?)`}},

		{"rules instead of rule", `
[[rules]]
name = "a"
`, []string{`p.toml:2: unknown key "rules" at the top level (write each rule as [[rule]])`}},

		{"unknown rule key", `
[[rule]]
name = "a"
tool = "t"
decison = "allow"
`, []string{
			`p.toml:2: rule a has no decision; write decision = "allow", "deny" or "ask"`,
			`p.toml:5: unknown key "decison" in rule a (did you mean "decision"?)`,
		}},

		{"allow_critical inside a rule", `
[[rule]]
name = "a"
tool = "t"
decision = "allow"
allow_critical = true
`, []string{`p.toml:6: allow_critical in rule a: it is a top-level setting of the whole policy; put it above the first [[rule]]`}},

		{"unknown condition test, with its line", `
[[rule]]
name = "ok"
tool = "t"
decision = "allow"

[[rule]]
name = "b"
tool = "t"
decision = "allow"
[rule.args]
env = "x"
branch = { globb = "release/*" }
`, []string{`p.toml:13: unknown test "globb" in the condition of argument branch in rule b (did you mean "glob"?)`}},

		{"dotted argument key", `
[[rule]]
name = "a"
tool = "t"
decision = "allow"
[rule.args]
spec.replicas = 3
`, []string{`p.toml:7: unknown test "replicas" in the condition of argument spec in rule a (known: equals, in, glob, regex, min, max); to match the nested argument spec.replicas, use [rule.pointers] "/spec/replicas"`}},

		{"missing name", `
[[rule]]
tool = "t"
decision = "allow"
`, []string{`p.toml:2: rule 1 has no name; every rule needs a unique name, which the journal records`}},

		{"bad name", `
[[rule]]
name = "two words"
tool = "t"
decision = "allow"
`, []string{`p.toml:3: name "two words" of rule 1 must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`}},

		{"duplicate name", `
[[rule]]
name = "same"
tool = "a"
decision = "allow"

[[rule]]
name = "same"
tool = "b"
decision = "allow"
`, []string{`p.toml:7: duplicate rule name "same": the rule at line 2 has it already`}},

		{"unknown decision", `
[[rule]]
name = "a"
tool = "t"
decision = "approve"
`, []string{`p.toml:5: decision in rule a must be "allow", "deny" or "ask", found the string "approve"`}},

		{"deny without reason", `
[[rule]]
name = "a"
tool = "t"
decision = "deny"
reason = "  "
`, []string{`p.toml:2: deny rule a has no reason; the model is told why its call was refused, so write reason = "..."`}},

		{"no tool", `
[[rule]]
name = "a"
decision = "ask"
`, []string{`p.toml:2: rule a has no tool; write tool = "NAME" (a glob such as "*" matches every tool)`}},

		{"bad glob", `
[[rule]]
name = "a"
tool = "gh_[a-"
decision = "ask"
`, []string{`p.toml:4: tool in rule a: bad glob "gh_[a-": a [ is never closed by ]`}},

		{"bad argument glob", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
p = { glob = 'x\' }
`, []string{`p.toml:7: glob of argument p in rule a: bad glob "x\\": it ends with a lone \`}},

		{"bad regex", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
tag = { regex = "v(1" }
`, []string{"p.toml:7: regex of argument tag in rule a: bad regular expression \"v(1\": missing closing ): `v(1`"}},

		{"bad pointer", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.pointers]
"spec/replicas" = 1
"/a~" = 2
`, []string{
			`p.toml:7: pointer "spec/replicas" in rule a: a JSON Pointer starts with "/", such as "/spec/replicas"`,
			`p.toml:8: pointer "/a~" in rule a: ~ must be followed by 0 (for ~) or 1 (for /)`,
		}},

		{"min above max", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
n = { min = 10, max = 2.5 }
`, []string{`p.toml:7: range of argument n in rule a is empty: min 10 is greater than max 2.5`}},

		{"range of a string", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
n = { min = "1" }
`, []string{`p.toml:7: min of argument n in rule a must be a number, found the string "1"`}},

		{"a list as a value", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
env = ["dev", "qa"]
`, []string{`p.toml:7: argument env in rule a is a list; to match one of several values write { in = [...] }`}},

		{"unknown risk", `
[[rule]]
name = "a"
tool = "t"
risk = "severe"
decision = "ask"
`, []string{`p.toml:5: risk in rule a must be low, medium, high or critical, found the string "severe"`}},

		{"wrong type of allow_critical", `
allow_critical = "yes"
[[rule]]
name = "a"
tool = "t"
decision = "ask"
`, []string{`p.toml:2: allow_critical must be true or false, found the string "yes"`}},

		{"a date", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
day = 2024-01-02
`, []string{`p.toml:7: argument day in rule a: a value must be a string, number or boolean, found a date or time`}},

		{"not a number a call can send", `
[[rule]]
name = "a"
tool = "t"
decision = "ask"
[rule.args]
n = { max = inf }
`, []string{`p.toml:7: max of argument n in rule a must be a number, found the number +Inf`}},

		{"no rules", `allow_critical = true`, []string{`p.toml: the policy has no rules; write each one as [[rule]] with name, tool and decision`}},

		{"TOML syntax", `
[[rule]]
name = "a
`, []string{`p.toml:3: not valid TOML: strings cannot contain newlines`}},

		{"TOML duplicate key", `
[[rule]]
name = "a"
name = "b"
`, []string{`p.toml:4: not valid TOML: Key 'rule.name' has already been defined.`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("p.toml", []byte(c.src))
			if err == nil {
				t.Fatalf("no error; policy %+v", p)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, want Errors", err)
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestEveryErrorIsReportedInLineOrder(t *testing.T) {
	_, err := Parse("p.toml", []byte(`
bogus = 1
[[rule]]
name = "a"
tool = "t"
decision = "maybe"
[rule.args]
x = { regex = "(" }
[[rule]]
name = "a"
tool = "t"
decision = "allow"
`))
	es, _ := err.(Errors)
	if len(es) != 4 {
		t.Fatalf("got %d errors:\n%v", len(es), err)
	}
	// a rule with errors still claims its name
	for i, want := range []int{2, 6, 8, 9} {
		if es[i].Line != want {
			t.Errorf("error %d at line %d, want %d: %v", i, es[i].Line, want, es[i])
		}
	}
}

func TestInlineRulesAreAccepted(t *testing.T) {
	p := mustParse(t, `rule = [ { name = "a", tool = "t", decision = "allow", args = { env = "dev" } } ]`)
	expect(t, p, "t", "low", `{"env": "dev"}`, Allow, "a")
}

func TestHashAndPath(t *testing.T) {
	src := []byte("[[rule]]\nname = \"a\"\ntool = \"t\"\ndecision = \"allow\"\n")
	sum := sha256.Sum256(src)
	want := "sha256:" + hex.EncodeToString(sum[:])
	p := mustParse(t, string(src))
	if p.Hash() != want || p.Path() != "" || p.Rules() != 1 {
		t.Errorf("Parse: hash %s path %q rules %d", p.Hash(), p.Path(), p.Rules())
	}
	path := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Hash() != want || q.Path() != path {
		t.Errorf("Load: hash %s path %q", q.Hash(), q.Path())
	}
	// a comment changes the bytes, so the hash
	r := mustParse(t, string(src)+"# note\n")
	if r.Hash() == want {
		t.Error("hash ignores a change of the file")
	}
}

func TestLoadRefusesLargeFiles(t *testing.T) {
	dir := t.TempDir()
	rule := "[[rule]]\nname = \"a\"\ntool = \"t\"\ndecision = \"allow\"\n"
	// exactly the limit is read
	exact := rule + "#" + strings.Repeat("x", MaxSize-len(rule)-2) + "\n"
	if len(exact) != MaxSize {
		t.Fatalf("exact is %d bytes", len(exact))
	}
	path := filepath.Join(dir, "exact.toml")
	if err := os.WriteFile(path, []byte(exact), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("a file of exactly MaxSize: %v", err)
	}
	path = filepath.Join(dir, "big.toml")
	if err := os.WriteFile(path, []byte(exact+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || err.Error() != path+": the policy file is larger than 1048576 bytes (1 MiB)" {
		t.Errorf("big file: %v", err)
	}
	if _, err := Parse("x", []byte(exact+"\n")); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Parse of a big text: %v", err)
	}
}

func TestLoadRefusesDevZeroQuickly(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load("/dev/zero")
		done <- err
	}()
	// not a timing assertion: an unbounded read would never finish
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("/dev/zero: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Load(/dev/zero) did not return")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")
	if _, err := Load(missing); err == nil || err.Error() != missing+": the policy file does not exist" {
		t.Errorf("missing: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "cannot read the policy file: is a directory") {
		t.Errorf("directory: %v", err)
	}
	path := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(path, []byte("[[rule]]\nname = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":3: ") && !strings.HasPrefix(err.Error(), path+":") {
		t.Errorf("bad: %v", err)
	}
	if !strings.Contains(err.Error(), path+":2: name of rule 1 must be a string, found the number 1") {
		t.Errorf("bad: %v", err)
	}
}

// FuzzParse: no policy text makes Parse or Decide panic.
func FuzzParse(f *testing.F) {
	f.Add(deploys, `{"env": "staging"}`)
	f.Add("[[rule]]\nname=\"a\"\ntool=\"[\"\n", `{}`)
	f.Add("rule = [{name=\"a\",tool=\"*\",decision=\"allow\",pointers={\"/a/0\"={min=1}}}]", `{"a":[2]}`)
	f.Fuzz(func(t *testing.T, src, args string) {
		p, err := Parse("f.toml", []byte(src))
		if err != nil {
			return
		}
		p.Decide(Call{Tool: "deploy", Risk: "critical", Args: []byte(args)})
	})
}

// TestHostileShapesAreRefusedBeforeParsing: the TOML library takes time
// growing with the square of nesting depth and of dotted key length; a
// file within the size limit must not keep it busy for minutes.
func TestHostileShapesAreRefusedBeforeParsing(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"nested inline tables", "a = " + strings.Repeat("{b=", 300000),
			"x.toml:1: tables and lists nest more than 16 levels deep; a policy needs only a few"},
		{"nested lists", "\n\na = " + strings.Repeat("[", 300000),
			"x.toml:3: tables and lists nest more than 16 levels deep; a policy needs only a few"},
		{"dotted key", strings.Repeat("a.", 400000) + "b = 1", "x.toml:1: a line has a key of more than 32 dotted parts"},
		{"dotted numeric key", strings.Repeat("1.", 400000) + "1 = 1", "x.toml:1: a line has a key of more than 32 dotted parts"},
		{"quoted dotted key", strings.Repeat(`"a".`, 100) + "b = 1", "x.toml:1: a line has a key of more than 32 dotted parts"},
	}
	for _, c := range cases {
		_, err := Parse("x.toml", []byte(c.src))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// numbers, strings and comments full of dots and brackets are fine
	mustParse(t, `
# [[[[[[[[[[[[[[[[[[ ... ]]]]]]]]]]]]]]]]]]
[[rule]]
name = "a.b.c"
tool = "t"
decision = "allow"
reason = """a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j
[[[[[[[[[[[[[[[[[[[[ {{{{{{{{{{{{{{{{{{{{{{ """
[rule.args]
n = { in = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3.1, 3.2, 3.3, 3.4, 3.5, 3.6] }
s = { regex = 'a\.b\.c\.d\.e\.f\.g\.h\.i\.j\.k\.l\.m\.n\.o\.p\.q\.r\.s\.t\.u\.v\.w\.x\.y\.z\.a\.b\.c\.d\.e\.f\.g\.h' }
`)
}
