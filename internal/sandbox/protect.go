package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Protected names the host paths a sandboxed command must not read or
// change: nexa's own files (the run store, its logs and locks, secrets
// files) and files nexa later runs outside the sandbox. The CLI builds it
// where the store is opened; the zero value protects nothing.
type Protected struct {
	// Dirs are replaced by an empty, read-only directory when they exist
	// (the .nexa directory, the logs and locks beside a store).
	Dirs []string
	// Files are replaced by an empty, read-only file (/dev/null) when they
	// exist. One that does not exist yet but would be created in the
	// working directory is reserved: bubblewrap leaves an empty file of
	// that name on the host as the mount point, so the command cannot
	// create it (a planted SQLite -journal beside a store would otherwise
	// be replayed into the store by its next open).
	Files []string
	// ReadOnly are existing files that stay visible but cannot be changed
	// (the program and legacy tool files, which later run outside the
	// sandbox).
	ReadOnly []string
}

// Hidden returns every path of Dirs and Files, for callers that refuse
// access to them by other means (std.fs).
func (p Protected) Hidden() []string {
	return append(append([]string(nil), p.Dirs...), p.Files...)
}

// realPath resolves p's symbolic links; for a path that does not exist
// yet, its directory's links are resolved and the name kept. ok is false
// when p is relative or its directory cannot be resolved.
func realPath(p string) (string, bool) {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", false
	}
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real, true
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", false
	}
	return filepath.Join(dir, filepath.Base(p)), true
}

// protectArgs returns the bubblewrap options that apply prot to a command
// whose writable working directory is work; they must come after the bind
// of work, so that they cover it. Paths inside a hidden tree (/tmp, /run)
// but not inside work are invisible already and need nothing.
func protectArgs(prot Protected, work string) []string {
	type mount struct {
		path string
		dir  bool
	}
	var hide []mount
	for _, d := range prot.Dirs {
		real, ok := realPath(d)
		if !ok || !visible(real, work) {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.IsDir() && real != work {
			hide = append(hide, mount{real, true})
		}
	}
	for _, f := range prot.Files {
		real, ok := realPath(f)
		if !ok || !visible(real, work) || real == work {
			continue
		}
		fi, err := os.Lstat(real)
		switch {
		case err == nil && fi.IsDir():
			hide = append(hide, mount{real, true})
		case err == nil:
			hide = append(hide, mount{real, false})
		case errors.Is(err, fs.ErrNotExist) && within(real, work):
			// Reserve the name (see Protected.Files).
			hide = append(hide, mount{real, false})
		}
	}
	// Shortest first, and nothing inside an already hidden directory:
	// the empty directory hides it.
	sort.Slice(hide, func(i, j int) bool { return hide[i].path < hide[j].path })
	var a []string
	var dirs []string
	seen := map[string]bool{}
	for _, m := range hide {
		if seen[m.path] || insideAny(m.path, dirs) {
			continue
		}
		seen[m.path] = true
		if m.dir {
			dirs = append(dirs, m.path)
			a = append(a, "--tmpfs", m.path, "--remount-ro", m.path)
		} else {
			a = append(a, "--ro-bind", "/dev/null", m.path)
		}
	}
	for _, f := range prot.ReadOnly {
		real, ok := realPath(f)
		if !ok || !within(real, work) || real == work || insideAny(real, dirs) || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		seen[real] = true
		a = append(a, "--ro-bind", real, real)
	}
	return a
}

// visible reports whether p can be seen inside the sandbox: inside the
// working directory, or on the read-only host outside the hidden trees.
func visible(p, work string) bool {
	return within(p, work) || !hidden(p)
}

// insideAny reports whether p is strictly inside one of dirs.
func insideAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p != d && within(p, d) {
			return true
		}
	}
	return false
}
