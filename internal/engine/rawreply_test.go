package engine

import (
	"context"
	"encoding/json"
	"github.com/nexa-run/nexa/internal/tool"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

// rawProvider answers like its inner provider with raw as the saved reply.
type rawProvider struct {
	*turnsProvider
	raw json.RawMessage
}

func (p rawProvider) Complete(ctx context.Context, req provider.Request, progress func(provider.Event)) (provider.Reply, error) {
	r, err := p.turnsProvider.Complete(ctx, req, progress)
	r.Raw = p.raw
	return r, err
}

// A provider's raw reply with bytes that are not UTF-8 (Go's JSON scanner
// lets them through inside strings) is stored as valid UTF-8 JSON, so that
// `runs show --json` never prints invalid JSON.
func TestRawReplyIsStoredAsValidUTF8(t *testing.T) {
	h := newHarness(t, answer("final"))
	raw := json.RawMessage("{\"content\":\"caf\xe9 \xff\xfe ok\"}")
	if !json.Valid(raw) {
		t.Fatal("the test's raw reply should pass json.Valid")
	}
	r, err := NewRunner(Config{
		Program: h.prog, Agent: h.prog.Agents[0], Store: h.store, Provider: rawProvider{h.prov, raw},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyPython: h.exec},
		Now:       func() time.Time { return h.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(context.Background(), NewRun{Task: "t"})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("status %v, err %v", st.Status, err)
	}
	loaded, err := h.store.Load(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := loaded.ProviderItems[0].Raw
	if !utf8.Valid(got) || !json.Valid(got) {
		t.Fatalf("stored raw = %q", got)
	}
	var v struct{ Content string }
	if err := json.Unmarshal(got, &v); err != nil || v.Content != "caf\ufffd \ufffd ok" {
		t.Errorf("stored content = %q (%v)", v.Content, err)
	}
}
