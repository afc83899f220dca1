package main

import (
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdPromText: promtext NAME{LABEL=VALUE,...} NUMBER parses stdout as the
// Prometheus text format (failing when it is not) and checks that the
// sample NAME with those labels (others may be present) has the value
// NUMBER. NAME_count and NAME_sum read a histogram's count and sum.
// "! promtext NAME{...}" checks that no such sample exists.
func cmdPromText(ts *testscript.TestScript, neg bool, args []string) {
	if (neg && len(args) != 1) || (!neg && len(args) != 2) {
		ts.Fatalf("usage: promtext NAME{LABEL=VALUE,...} NUMBER")
	}
	name, labels := args[0], map[string]string{}
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if !strings.HasSuffix(name, "}") {
			ts.Fatalf("promtext: %q: labels end with }", name)
		}
		for _, kv := range strings.Split(name[i+1:len(name)-1], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				ts.Fatalf("promtext: label %q is not NAME=VALUE", kv)
			}
			labels[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
		name = name[:i]
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(ts.ReadFile("stdout")))
	if err != nil {
		ts.Fatalf("promtext: stdout is not the Prometheus text format: %v", err)
	}
	family, part := name, ""
	if fams[family] == nil {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] != nil {
				family, part = base, suffix
			}
		}
	}
	var found *dto.Metric
	if f := fams[family]; f != nil {
	next:
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, l := range m.Label {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			found = m
			break
		}
	}
	if neg {
		if found != nil {
			ts.Fatalf("promtext: %s is present", args[0])
		}
		return
	}
	if found == nil {
		ts.Fatalf("promtext: no sample %s", args[0])
	}
	var got float64
	switch {
	case part == "_count":
		got = float64(found.GetHistogram().GetSampleCount())
	case part == "_sum":
		got = found.GetHistogram().GetSampleSum()
	case found.Counter != nil:
		got = found.GetCounter().GetValue()
	case found.Gauge != nil:
		got = found.GetGauge().GetValue()
	default:
		got = found.GetUntyped().GetValue()
	}
	want, err := strconv.ParseFloat(args[1], 64)
	if err != nil {
		ts.Fatalf("promtext: %q is not a number", args[1])
	}
	if got != want {
		ts.Fatalf("promtext: %s is %v, want %v", args[0], got, want)
	}
}
