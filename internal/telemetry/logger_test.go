package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestLoggerNeverWritesSecrets: whatever carries a secret — the message,
// a string, an error, a group, attributes given once with With — the
// JSON and text logs hold the redacted form only.
func TestLoggerNeverWritesSecrets(t *testing.T) {
	const secret = "sk-live-TOPSECRET-991"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	for _, format := range []string{LogJSON, LogText} {
		var buf bytes.Buffer
		log, err := NewLogger(&buf, format, slog.LevelInfo, redact)
		if err != nil {
			t.Fatal(err)
		}
		log = log.With("store", "postgres://nexa:"+secret+"@db/nexa")
		log.Info("claimed run with key "+secret, "run_id", "run_1",
			"err", errors.New("provider said: bad key "+secret),
			slog.Group("provider", "key", secret, "tries", 2),
			"raw", []byte(secret))
		log.Debug("not at this level")
		out := buf.String()
		if strings.Contains(out, secret) {
			t.Errorf("%s log holds the secret:\n%s", format, out)
		}
		if !strings.Contains(out, "run_1") || !strings.Contains(out, "[redacted]") {
			t.Errorf("%s log lost its content:\n%s", format, out)
		}
		if strings.Contains(out, "not at this level") {
			t.Errorf("%s log wrote a record below its level", format)
		}
		if format == LogJSON {
			var rec map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec); err != nil {
				t.Fatalf("one JSON object per record: %v\n%s", err, out)
			}
			if rec["run_id"] != "run_1" || rec["level"] != "INFO" {
				t.Errorf("JSON record %v", rec)
			}
		}
	}
}

// TestLogFormatIsChecked: --log-format takes json or text only.
func TestLogFormatIsChecked(t *testing.T) {
	if _, err := NewLogger(&bytes.Buffer{}, "yaml", slog.LevelInfo, nil); err == nil || !strings.Contains(err.Error(), "json or text") {
		t.Errorf("--log-format yaml: %v", err)
	}
}
