// Package store keeps runs in a SQLite database (modernc.org/sqlite, pure
// Go). *SQLite implements state.Store; the CLI opens it at
// DefaultPath(workDir) = WORKDIR/.nexa/runs.sqlite3 unless --store or
// NEXA_STORE names another file.
//
// # Layout on disk
//
// Open creates a missing parent directory with mode 0700; when that directory
// is named .nexa it also gets a .gitignore containing "*" (written only if
// absent, never overwritten). A new database file is created with mode 0600
// before SQLite touches it, and SQLite gives its -wal and -shm files the same
// mode. An existing store whose file grants group or other permissions is
// tightened to 0600 once Open has verified that it is a nexa run store (a file
// that is not one is never modified, not even its mode); a failing chmod (a
// file owned by another user) is ignored, because the store still works.
// Close copies the -wal file into the database file (SQLite does so as the
// last connection closes), so between processes the store is that file.
//
// # Schema
//
// One row per run in runs (the header: status, revision, timestamps, config,
// task, usage, output, error) and one row per message, provider item and
// journal entry in messages, provider_items and journal, keyed by (run, seq)
// or (run, call id); a journal row also keeps its entry's stage and turn in
// columns, indexed with its seq and call id (schema version 3), so that
// LoadForDrive reads stubs of completed entries from the index alone. A
// save therefore writes the header and the rows of its
// state.Delta, and costs what changed, not the length of the run. A handle
// remembers the header it last wrote for each run; a save that changes only
// the usage then sets only usage and updated_at (a row still at the
// revision written holds exactly that header, since every header write
// increments the revision). The statements of a save are prepared once. The schema
// is versioned with PRAGMA user_version and migrated forward on Open, in one
// transaction; a file stamped by a newer binary (ErrNewerSchema), a SQLite
// file of another application (ErrNotRunStore) and a file that is not SQLite
// at all (ErrCorrupt) are refused without being written.
//
// # The compare-and-set rule and fencing
//
// Every write is one BEGIN IMMEDIATE transaction conditioned on the revision
// the caller read and, when the caller holds the run's lease
// (RunState.Lease), on that lease:
//
//	UPDATE runs SET ..., revision = revision + 1
//	WHERE id = ? AND revision = ? AND lease_owner = ? AND lease_epoch = ?
//
// Without a lease the last condition is instead that no live lease holds
// the run. When no row matches, the transaction is rolled back, nothing at
// all is written, and the caller gets a *state.ConflictError naming the
// revision it read and the revision stored, an error wrapping
// state.ErrLeaseLost (another executor took the run over), a
// *state.HeldError, or state.ErrNotFound if the run is gone. BEGIN IMMEDIATE
// takes the write lock before the first read, so two processes on one file
// serialize instead of failing half-way. A writer waits up to the busy
// timeout (5s by default) inside SQLite, then tries again for as long as
// its context allows (without a deadline: until the store is free) and
// only then fails with ErrLocked (state.ErrBusy). Of two executors that
// loaded the same revision exactly one can save.
//
// # Leases
//
// Columns lease_owner, lease_epoch and lease_expires hold a run's current
// lease (schema version 2). Acquire locks the run's lock file
// (locks/RUN.lock beside the database, flock, non-blocking) and then, in one
// transaction, writes the new owner with epoch + 1 and an expiry from the
// store's clock. The holder keeps the lock file locked until Release or its
// death, when the kernel unlocks it. So on this store a run is held exactly
// while its lock file is locked: a live holder keeps its run even past the
// expiry, a dead holder's run can be taken at once. (A SQLite database in
// WAL mode is only ever shared by processes of one host, so the kernel lock
// is authoritative.) Prune locks each candidate's lock file before deleting
// it and skips those it cannot lock; after the commit it removes the run's
// files: logs/RUN.log, logs/RUN.mcp.log and the lock file.
//
// # Crash guarantees
//
// The database runs in WAL mode with synchronous=FULL: when Create, Save,
// Update, Acquire, Renew, Release or Prune returns nil, the transaction is in the write-ahead log and
// fsynced, so it survives a kill -9 of the process at any later instant (and
// a power loss, as far as the disk honours fsync). A transaction interrupted
// by a crash is rolled back by SQLite when the file is next opened: a run is
// always seen at some committed revision, with exactly the rows committed
// with it, and Open and Load work after a crash at any instant, including
// during Open's own migration. A Save that returns an error may or may not
// have committed (an I/O error at commit); the revision check makes the next
// Save of the same state fail with a conflict rather than write twice.
//
// Open does not scan the whole file for corruption (that would cost time in
// the size of the store); damage caused outside SQLite, such as a truncated
// copy, surfaces as ErrCorrupt from the operation that reads the damaged
// page.
package sqlite
