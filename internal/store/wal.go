package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"reflect"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// walKeep is the largest write-ahead log Close leaves behind, in bytes.
//
// By default SQLite checkpoints the log into the database file when the
// last connection to it closes, then deletes it: two fsyncs on the way out
// of every process (the log's and the database file's), and one more at
// the next process's first commit (the new log's header). Every commit is
// on disk in the log already (synchronous=FULL), so that checkpoint adds
// no durability, only fsyncs. The store's connections are opened with
// checkpoint-on-close off (noCheckpointOnClose) and Close leaves the log
// in place while it is at most walKeep; the next process to open the store
// reads it once (SQLite's recovery: BenchmarkOpenWithLog, about 0.5 ms
// for any log and 0.1 ms more per 100 KiB here). Past walKeep, Close
// checkpoints and truncates it (checkpointIfLarge). A one-step run writes
// ~120 KiB of log, so that is one close in four or five. A variable so
// that tests can lower it.
var walKeep int64 = 512 << 10

// closeBusyTimeout bounds how long Close's checkpoint waits for other
// processes' transactions; it gives up (the log stays, for a later Close)
// rather than hold the process's exit.
const closeBusyTimeout = 100 // milliseconds

// connector opens the store's connections through modernc's driver and
// turns each one's checkpoint-on-close off (see walKeep).
type connector struct {
	dsn string
	drv *sqlite.Driver
}

// Connect opens one connection; database/sql calls it for each connection
// of the pool.
func (c connector) Connect(context.Context) (driver.Conn, error) {
	dc, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	// Without the setting the connection still works: it checkpoints
	// when it closes, as SQLite does by default (TestCloseKeepsTheLog
	// catches a driver that no longer lets it be set).
	_ = noCheckpointOnClose(dc)
	return dc, nil
}

// Driver is the driver the connections come from.
func (c connector) Driver() driver.Driver { return c.drv }

// errNoHandle: the driver's connection does not have the fields
// noCheckpointOnClose reads (a new version of modernc.org/sqlite).
var errNoHandle = errors.New("modernc.org/sqlite connection has no db and tls fields")

// noCheckpointOnClose sets SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE on a
// connection of modernc.org/sqlite. The driver does not export
// sqlite3_db_config, so the connection's SQLite handle and the C thread
// state it is used with are read from its fields (db, tls) by reflection.
func noCheckpointOnClose(dc driver.Conn) error {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return errNoHandle
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
		return errNoHandle
	}
	t := (*libc.TLS)(tls.UnsafePointer())
	const slot = 8 // libc.VaList's stride per argument
	va := libc.Xmalloc(t, 2*slot)
	if va == 0 {
		return errors.New("sqlite3_db_config: out of memory")
	}
	defer libc.Xfree(t, va)
	// (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, int on, int *out), out unused
	if rc := sqlite3.Xsqlite3_db_config(t, uintptr(db.Uint()), sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		libc.VaList(va, int32(1), uintptr(0))); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): result code %d", rc)
	}
	return nil
}

// checkpointIfLarge copies the log into the database file and truncates
// it when it has grown past walKeep. It waits at most closeBusyTimeout for
// other processes; a checkpoint that cannot finish leaves the log as it
// is, which loses nothing.
func (s *SQLite) checkpointIfLarge(ctx context.Context) error {
	fi, err := os.Stat(s.path + "-wal")
	if err != nil || fi.Size() <= walKeep {
		return nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return dbErr(ctx, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", closeBusyTimeout)); err != nil {
		return dbErr(ctx, err)
	}
	if _, err := c.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return dbErr(ctx, err)
	}
	return nil
}
