package mcptool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tools/mcptool/mcptest"
)

// A server that asks for a form first gets an outcome that carries the
// request (schema and state) and nothing done; the retry with the answer
// and the state completes the call, whose effect happens once.
func TestInputRequestFormRoundTrip(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	out, err := s.CallWith(context.Background(), "sign_up", json.RawMessage(`{"text":"acme"}`), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := out.Input
	if in == nil || len(in.Requests) != 1 {
		t.Fatalf("outcome %+v, want one input request", out)
	}
	r := in.Requests[0]
	if r.Key != "account" || r.Mode != state.InputForm || r.Message == "" || len(r.Schema) == 0 || r.URL != "" {
		t.Errorf("request %+v", r)
	}
	if in.Server != s.Spec().Raw || in.RequestState != "v1:sign_up:acme" {
		t.Errorf("round %+v", in)
	}
	if _, err := os.Stat(filepath.Join(opts.WorkDir, "signups.txt")); err == nil {
		t.Fatal("the tool acted before it had its answer")
	}
	now := time.Now()
	in.Responses = json.RawMessage(`{"account":{"action":"accept","content":{"name":"Ada","seats":3}}}`)
	in.RespondedAt = &now
	out, err = s.CallWith(context.Background(), "sign_up", json.RawMessage(`{"text":"acme"}`), CallOptions{Input: in})
	if err != nil || out.Input != nil || !out.Success || out.Output != "signed up Ada" {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(opts.WorkDir, "signups.txt")); string(b) != "acme Ada seats=3\n" {
		t.Errorf("signups.txt = %q", b)
	}
}

// A URL request comes with its domain; nexa only reports it.
func TestInputRequestURL(t *testing.T) {
	opts, _ := testOptions(t)
	s := connect(t, stdioSpec(t, "tasks"), opts)
	out, err := s.CallWith(context.Background(), "open_link", json.RawMessage(`{"text":"cal"}`), CallOptions{})
	if err != nil || out.Input == nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	r := out.Input.Requests[0]
	if r.Mode != state.InputURL || r.URL != mcptest.ConsentURL || r.Domain != "consent.example.test" || len(r.Schema) != 0 {
		t.Errorf("request %+v", r)
	}
}

// A server of an earlier revision is offered no elicitation, so it asks
// for nothing: the tool says what it lacks (a failed call, not a wait).
func TestInputNotOfferedBeforeRevision(t *testing.T) {
	opts, _ := testOptions(t)
	ts := startTaskHTTP(t, opts.WorkDir, false, false, nil, "2025-11-25")
	s := connect(t, ts.URL, opts)
	out, err := s.CallWith(context.Background(), "sign_up", json.RawMessage(`{"text":"acme"}`), CallOptions{})
	if err != nil || out.Input != nil || out.Success {
		t.Fatalf("outcome %+v, %v; want a failed call without input", out, err)
	}
}

// The same round trip over stateless Streamable HTTP (2026-07-28).
func TestInputRequestOverHTTP(t *testing.T) {
	opts, _ := testOptions(t)
	ts := startTaskHTTP(t, opts.WorkDir, true, false, nil, "2026-07-28")
	s := connect(t, ts.URL, opts)
	out, err := s.CallWith(context.Background(), "sign_up", json.RawMessage(`{"text":"web"}`), CallOptions{})
	if err != nil || out.Input == nil || out.Input.RequestState != "v1:sign_up:web" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	now := time.Now()
	out.Input.Responses, out.Input.RespondedAt = json.RawMessage(`{"account":{"action":"accept","content":{"name":"Bo"}}}`), &now
	out, err = s.CallWith(context.Background(), "sign_up", json.RawMessage(`{"text":"web"}`), CallOptions{Input: out.Input})
	if err != nil || !out.Success || out.Output != "signed up Bo" {
		t.Fatalf("retry = %+v, %v", out, err)
	}
}
