package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// TestExportRefusesFileOverLimit: an export that would be larger than an
// import reads is refused before a byte is written, so that nexa never
// writes an export it cannot import.
func TestExportRefusesFileOverLimit(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	run := &state.RunState{ID: "run_01JDBIG", Status: state.StatusFailed, CreatedAt: at, UpdatedAt: at,
		Config: state.Config{SourceHash: "sha256:x", Agent: "A", Provider: state.ProviderIdentity{Kind: "script", Model: "m"}},
		Task:   strings.Repeat("t", 4000)}
	if err := s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err := exportLimit(ctx, s, []string{run.ID}, &buf, at, 4096)
	re, ok := AsError(err)
	if !ok || re.Code != CodeExportTooLarge || !strings.HasPrefix(re.Message, "the export would be over 4096 bytes, the limit for an import (run run_01JDBIG alone is ") || buf.Len() != 0 {
		t.Fatalf("error %v, wrote %d bytes", err, buf.Len())
	}
	if _, err := exportLimit(ctx, s, []string{run.ID}, &buf, at, 8192); err != nil || buf.Len() == 0 {
		t.Fatalf("under the limit: %v", err)
	}
}
