package builtin

import (
	"context"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

const defaultFindLimit = 100

// compileRegex compiles pattern with flags (i, m, s, U) in Go's RE2 syntax,
// which runs in linear time, so no pattern can hang the call.
func compileRegex(pattern, flags string) (*regexp.Regexp, error) {
	for _, f := range flags {
		if !strings.ContainsRune("imsU", f) {
			return nil, fmt.Errorf("unknown flag %q; flags are i, m, s and U", f)
		}
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %v (RE2 syntax has no backreferences or lookaround)", err)
	}
	return re, nil
}

// regexMatch is one match as shown to the model; Index is a character
// position, and an unmatched optional group is null.
type regexMatch struct {
	Match  string             `json:"match"`
	Index  int                `json:"index"`
	Groups []*string          `json:"groups"`
	Named  map[string]*string `json:"named,omitempty"`
}

func describeMatch(re *regexp.Regexp, text string, loc []int) regexMatch {
	m := regexMatch{
		Match:  text[loc[0]:loc[1]],
		Index:  utf8.RuneCountInString(text[:loc[0]]),
		Groups: []*string{},
	}
	names := re.SubexpNames()
	for g := 1; g < len(loc)/2; g++ {
		var v *string
		if loc[2*g] >= 0 {
			s := text[loc[2*g]:loc[2*g+1]]
			v = &s
		}
		m.Groups = append(m.Groups, v)
		if names[g] != "" {
			if m.Named == nil {
				m.Named = map[string]*string{}
			}
			m.Named[names[g]] = v
		}
	}
	return m
}

// onRegex is the shape the regex tools share: decode the arguments into a,
// compile *pattern with *flags (a bad one is an ordinary tool error the
// model reads), then act with the expression.
func onRegex(c *call, a any, pattern, flags *string, act func(re *regexp.Regexp) tool.Outcome) (tool.Outcome, error) {
	if err := c.decode(a); err != nil {
		return argError(err), nil
	}
	re, err := compileRegex(*pattern, *flags)
	if err != nil {
		return fail("%v", err), nil
	}
	return act(re), nil
}

func regexMatchTool(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Pattern string `json:"pattern"`
		Text    string `json:"text"`
		Flags   string `json:"flags"`
	}
	return onRegex(c, &a, &a.Pattern, &a.Flags, func(re *regexp.Regexp) tool.Outcome {
		loc := re.FindStringSubmatchIndex(a.Text)
		if loc == nil {
			return okJSON(map[string]any{"matched": false})
		}
		m := describeMatch(re, a.Text, loc)
		return okJSON(struct {
			Matched bool `json:"matched"`
			regexMatch
		}{true, m})
	})
}

func regexFindAll(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Pattern string `json:"pattern"`
		Text    string `json:"text"`
		Flags   string `json:"flags"`
		Limit   int    `json:"limit"`
	}{Limit: defaultFindLimit}
	return onRegex(c, &a, &a.Pattern, &a.Flags, func(re *regexp.Regexp) tool.Outcome {
		if a.Limit <= 0 {
			a.Limit = defaultFindLimit
		}
		locs := re.FindAllStringSubmatchIndex(a.Text, a.Limit+1)
		truncated := len(locs) > a.Limit
		if truncated {
			locs = locs[:a.Limit]
		}
		matches := make([]regexMatch, 0, len(locs))
		for _, loc := range locs {
			matches = append(matches, describeMatch(re, a.Text, loc))
		}
		return okJSON(map[string]any{"count": len(matches), "matches": matches, "truncated": truncated})
	})
}

// pythonGroupRef is \1 … \99 in a replacement, written by models used to
// Python's re.sub. Compiled on first use: start-up pays nothing for it.
var pythonGroupRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\(\d{1,2})`) })

func regexReplace(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Pattern     string `json:"pattern"`
		Text        string `json:"text"`
		Replacement string `json:"replacement"`
		Flags       string `json:"flags"`
		Literal     bool   `json:"literal"`
	}
	return onRegex(c, &a, &a.Pattern, &a.Flags, func(re *regexp.Regexp) tool.Outcome {
		if a.Literal {
			return ok(re.ReplaceAllLiteralString(a.Text, a.Replacement))
		}
		repl := pythonGroupRef().ReplaceAllString(a.Replacement, "$${$1}")
		return ok(re.ReplaceAllString(a.Text, repl))
	})
}
