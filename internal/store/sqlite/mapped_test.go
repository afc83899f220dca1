package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"syscall"
	"testing"
)

// A store file cut short by another program while a read of a run maps
// it ends that read with an error, not with the runtime's crash, and the
// store handle goes on working: later reads report the damage as SQLite
// sees it, and Close returns.
func TestAStoreCutShortDuringAMappedReadIsAnError(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	// More pages than a connection caches, so the read goes to the map.
	if err := s.Create(ctx, newRun("long", 1500, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	err := s.readMapped(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&n); err != nil {
			return err
		}
		if err := os.Truncate(path, 8192); err != nil {
			t.Fatal(err)
		}
		_, err := loadRun(ctx, tx, "long")
		return err
	})
	if !errors.Is(err, errCutShort) {
		t.Fatalf("read of a store cut short under its map: %v, want errCutShort", err)
	}
	if _, err := s.Load(ctx, "long"); err == nil {
		t.Error("a later read of the cut store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Logf("Close after the fault: %v", err)
	}
}

// whileMapped turns only memory faults into errors: any other panic goes
// on as it was.
func TestWhileMappedLeavesOtherPanicsAlone(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "map")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 * 4096); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 2*4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	var b byte
	faulted, err := whileMapped(func() error { b = m[4096]; return nil })
	if !faulted || !errors.Is(err, errCutShort) {
		t.Fatalf("a read past the end of a mapped file: faulted %v, %v", faulted, err)
	}
	_ = b
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v, want the panic itself", r)
		}
	}()
	whileMapped(func() error { panic("not a fault") })
}
