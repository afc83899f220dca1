package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// TestAPIDecodesStrictly: every body the API reads is refused, with 400
// and a JSON error (413 when too large), unless it is exactly one object
// of known, correctly cased, unrepeated names; nothing is recorded for a
// refused body.
func TestAPIDecodesStrictly(t *testing.T) {
	s := newStore(t)
	addUnknownRun(t, s)
	ts := newServer(t, s, Options{})
	decide := ts.URL + "/api/runs/" + runID + "/decide"
	resolve := ts.URL + "/api/runs/" + unknownRunID + "/resolve"
	for _, tc := range []struct {
		name, url, body string
		code            int
	}{
		{"duplicate name", decide, `{"decisions":[{"call_id":"call_1","approved":false,"approved":true}]}`, 400},
		{"duplicate top-level name", decide, `{"decisions":[{"call_id":"call_2","approved":false}],"decisions":[{"call_id":"call_1","approved":true}]}`, 400},
		{"upper-case name", decide, `{"decisions":[{"call_id":"call_1","Approved":true}]}`, 400},
		{"case-mismatched top-level name", decide, `{"DECISIONS":[{"call_id":"call_1","approved":true}]}`, 400},
		{"case-mismatched call id name", decide, `{"decisions":[{"Call_ID":"call_1","approved":true}]}`, 400},
		{"unknown name", decide, `{"decisions":[{"call_id":"call_1","approved":true,"note":"x"}]}`, 400},
		{"trailing object", decide, `{"decisions":[{"call_id":"call_1","approved":true}]}{}`, 400},
		{"trailing garbage", decide, `{"decisions":[{"call_id":"call_1","approved":true}]} garbage`, 400},
		{"two bodies", decide, "{\"decisions\":[{\"call_id\":\"call_1\",\"approved\":true}]}\n{\"decisions\":[]}", 400},
		{"not UTF-8", decide, "{\"decisions\":[{\"call_id\":\"call_1\",\"approved\":true,\"reason\":\"\xff\"}]}", 400},
		{"empty body", decide, ``, 400},
		{"too large", decide, `{"decisions":[{"call_id":"call_1","approved":true,"reason":"` + strings.Repeat("x", MaxRequestBody) + `"}]}`, 413},
		{"resolve duplicate", resolve, `{"call_id":"pay_1","output":"o","success":true,"success":false}`, 400},
		{"resolve case", resolve, `{"call_id":"pay_1","output":"o","Output":"p","success":true}`, 400},
		{"resolve trailing", resolve, `{"call_id":"pay_1","output":"o","success":true}]`, 400},
	} {
		code, body := do(t, ts.Client(), "POST", tc.url, tc.body, "Content-Type", jsonCT)
		want := engine.CodeUsage
		if tc.code == http.StatusRequestEntityTooLarge {
			want = CodeTooLarge
		}
		if code != tc.code || errCode(t, body) != want {
			t.Errorf("%s: %d %.300s", tc.name, code, body)
		}
	}
	st := load(t, s)
	for _, id := range []string{"call_1", "call_2"} {
		if e := st.Entry(id); e.Decision != nil || e.Stage != state.StageNotStarted {
			t.Fatalf("a refused body recorded something for %s: %+v", id, e)
		}
	}
	if un, err := engine.Show(context.Background(), s, unknownRunID); err != nil || un.Entry("pay_1").Stage != state.StageStarted {
		t.Fatalf("a refused body resolved pay_1: %v", err)
	}
	// The well-formed body is read.
	code, body := do(t, ts.Client(), "POST", decide, `{"decisions":[{"call_id":"call_1","approved":true}]}`, "Content-Type", jsonCT)
	if code != 200 || load(t, s).Entry("call_1").Decision == nil {
		t.Fatalf("a strict, well-formed body: %d %s", code, body)
	}
}
