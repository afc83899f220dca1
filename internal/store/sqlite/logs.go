package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// logKinds maps the names of state.RunLog to the files of a run.
var logKinds = []struct {
	name string
	kind LogKind
}{{state.LogTools, LogTools}, {state.LogMCP, LogMCP}}

// RunLogs reads the log files of a run that exist, for an export. It
// creates nothing: an export only reads the store.
func (s *SQLite) RunLogs(_ context.Context, id string) ([]state.RunLog, error) {
	if !runrow.FileSafe(id) {
		return nil, fmt.Errorf("logs of run %q: not a run id", id)
	}
	var out []state.RunLog
	for _, k := range logKinds {
		b, err := os.ReadFile(s.runFile(logsDir, id, string(k.kind)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("logs of run %s: %w", id, err)
		}
		out = append(out, state.RunLog{Name: k.name, Data: b})
	}
	return out, nil
}

// PutRunLogs writes the logs of a run that was just imported, owner-only,
// replacing a file a pruned run with the same id may have left.
func (s *SQLite) PutRunLogs(_ context.Context, id string, logs []state.RunLog) error {
	for _, l := range logs {
		var kind LogKind
		for _, k := range logKinds {
			if k.name == l.Name {
				kind = k.kind
			}
		}
		if kind == "" {
			return fmt.Errorf("logs of run %s: unknown log %q", id, l.Name)
		}
		p, err := s.LogFile(id, kind)
		if err != nil {
			return err
		}
		if err := writeFile0600(p, l.Data); err != nil {
			return fmt.Errorf("logs of run %s: %w", id, err)
		}
	}
	return nil
}

// writeFile0600 writes data to path through a temporary file in the same
// directory, so a reader never sees half a log, with mode 0600.
func writeFile0600(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".import-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
