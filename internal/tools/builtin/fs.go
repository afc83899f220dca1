package builtin

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"
)

const (
	defaultReadBytes = 262144
	defaultListLimit = 500
	// maxEditBytes bounds the file file_edit loads into memory.
	maxEditBytes = 16 << 20
	// storeDir is the run store's directory (docs/reference/runtime.md#store-and-concurrency); the built-in
	// file tools neither read nor change it, whatever Options.Protected
	// says, so a model cannot destroy its own run or read other runs.
	storeDir = ".nexa"
)

// guardedMessage is the refusal of a path that is one of nexa's own files.
const guardedMessage = "path %q is nexa's own (the run store, its logs and locks, or a secrets file), which the file tools neither read nor change"

// jail confines paths to a run's working directory. Confinement has two
// layers: resolve checks paths lexically and through the symbolic links
// that exist now, which gives the model precise messages; every operation
// then goes through an os.Root, which the kernel-level openat walk keeps
// inside the directory even if links change between check and use.
type jail struct {
	root *os.Root
	// real is the working directory with its symbolic links resolved.
	real string
	// given is the absolute working directory as configured, so absolute
	// paths written either way are recognised.
	given string
	// guarded are the root-relative paths (storeDir and the protected
	// paths inside the working directory) that no file tool may touch.
	guarded []string
}

func openJail(workDir string, protected []string) (*jail, error) {
	if workDir == "" {
		return nil, errors.New("the run has no working directory")
	}
	given, err := filepath.Abs(workDir)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", workDir, err)
	}
	real, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", workDir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", workDir, err)
	}
	j := &jail{root: root, real: real, given: given, guarded: []string{storeDir}}
	for _, p := range protected {
		if r, ok := realIn(real, p); ok && r != "." {
			j.guarded = append(j.guarded, r)
		}
	}
	return j, nil
}

// realIn returns p (absolute) relative to base with its symbolic links
// resolved (for a path that does not exist yet, its directory's), when it
// is inside base.
func realIn(base, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		dir, derr := filepath.EvalSymlinks(filepath.Dir(p))
		if derr != nil {
			return "", false
		}
		real = filepath.Join(dir, filepath.Base(p))
	}
	return inside(base, real)
}

// isGuarded reports whether the root-relative rel is one of nexa's own
// files or inside one of its directories.
func (j *jail) isGuarded(rel string) bool {
	for _, g := range j.guarded {
		if rel == g || strings.HasPrefix(rel, g+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (j *jail) Close() { _ = j.root.Close() }

// pathError is a refusal or failure about a path, worded for the model.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func outside(p string) error {
	return &pathError{fmt.Sprintf("path %q is outside the working directory; use a path relative to it", p)}
}

// inside returns p relative to base when p is base or below it.
func inside(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// resolve maps a path argument to a path relative to the jail's root with
// every existing symbolic link resolved (the last component only when
// followLast), and refuses anything that leads outside. Components that do
// not exist yet are kept as written (they cannot be links).
func (j *jail) resolve(p string, followLast bool) (string, error) {
	if p == "" {
		return "", &pathError{"path is empty"}
	}
	if strings.ContainsRune(p, 0) {
		return "", &pathError{"path contains a NUL byte"}
	}
	var rel string
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		r, ok := inside(j.given, clean)
		if !ok {
			r, ok = inside(j.real, clean)
		}
		if !ok {
			return "", outside(p)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
		if _, ok := inside(".", rel); !ok {
			return "", outside(p)
		}
	}
	if rel == "." {
		return ".", nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := j.real
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				cur = filepath.Join(append([]string{next}, parts[i+1:]...)...)
				break
			}
			if errors.Is(err, syscall.ENOTDIR) {
				return "", &pathError{fmt.Sprintf("path %q: %s is not a directory", p, filepath.Join(parts[:i]...))}
			}
			return "", &pathError{fmt.Sprintf("path %q: %s", p, errText(err))}
		}
		last := i == len(parts)-1
		if fi.Mode()&fs.ModeSymlink == 0 || (last && !followLast) {
			cur = next
			continue
		}
		link := filepath.Join(parts[:i+1]...)
		target, err := filepath.EvalSymlinks(next)
		if err != nil {
			return "", &pathError{fmt.Sprintf("path %q: symbolic link %s points to something that does not exist", p, link)}
		}
		if _, ok := inside(j.real, target); !ok {
			return "", &pathError{fmt.Sprintf("path %q leads outside the working directory through symbolic link %s", p, link)}
		}
		cur = target
	}
	r, ok := inside(j.real, cur)
	if !ok {
		return "", outside(p)
	}
	if j.isGuarded(r) {
		return "", &pathError{fmt.Sprintf(guardedMessage, p)}
	}
	return r, nil
}

// display is the form of a root-relative path shown to the model.
func display(rel string) string { return filepath.ToSlash(rel) }

// osFailure words an error of a file operation for the model, without the
// absolute paths Go puts in its messages.
func osFailure(verb, rel string, err error) tool.Outcome {
	var pe *pathError
	switch {
	case errors.As(err, &pe):
		return fail("%s", pe.msg)
	case errors.Is(err, fs.ErrNotExist):
		return fail("%s does not exist", display(rel))
	case errors.Is(err, fs.ErrPermission):
		return fail("cannot %s %s: permission denied", verb, display(rel))
	case errors.Is(err, syscall.EISDIR):
		return fail("%s is a directory", display(rel))
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root caught a link changed since resolve looked at it.
		return fail("path %s leads outside the working directory", display(rel))
	default:
		return fail("cannot %s %s: %s", verb, display(rel), errText(err))
	}
}

// pathOp says how a file tool confines its path and names its action.
type pathOp struct {
	// verb completes "cannot VERB PATH" in the messages of a failure.
	verb string
	// modify refuses the working directory itself, for tools that change
	// what the path names.
	modify bool
	// followLast follows a symbolic link in the last component; a tool
	// that acts on a link itself (file_exists, file_delete) does not.
	followLast bool
}

// onPath is the one shape every file tool has: decode the arguments into a
// (which holds their defaults), let check refuse or complete them, open the
// jail (a missing working directory means nothing can run), confine *target,
// then act on the root-relative result. A refusal of check or of the path
// is an ordinary tool error the model reads; check may be nil.
func onPath(c *call, a any, target *string, op pathOp, check func() error, act func(j *jail, rel string) (tool.Outcome, error)) (tool.Outcome, error) {
	if err := c.decode(a); err != nil {
		return argError(err), nil
	}
	if check != nil {
		if err := check(); err != nil {
			return argError(err), nil
		}
	}
	j, err := openJail(c.inv.WorkDir, c.opts.Protected)
	if err != nil {
		return tool.Outcome{}, notExecuted(c.inv.Tool.Name, err.Error())
	}
	defer j.Close()
	resolve := j.resolve
	if op.modify {
		resolve = j.prepareWrite
	}
	rel, err := resolve(*target, op.followLast)
	if err != nil {
		return osFailure(op.verb, *target, err), nil
	}
	return act(j, rel)
}

// openRegular opens rel and makes sure it is a regular file. O_NONBLOCK
// keeps a FIFO planted in the working directory from hanging the call; it
// has no effect on regular files.
func (j *jail) openRegular(rel string, flag int) (*os.File, fs.FileInfo, error) {
	f, err := j.root.OpenFile(rel, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		_ = f.Close()
		return nil, nil, &pathError{fmt.Sprintf("%s is a directory", display(rel))}
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &pathError{fmt.Sprintf("%s is not a regular file", display(rel))}
	}
	return f, fi, nil
}

func fileRead(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Path     string `json:"path"`
		Offset   int64  `json:"offset"`
		MaxBytes int    `json:"max_bytes"`
	}{MaxBytes: defaultReadBytes}
	check := func() error {
		if a.MaxBytes <= 0 {
			a.MaxBytes = defaultReadBytes
		}
		if a.Offset < 0 {
			return errors.New("offset must not be negative")
		}
		return nil
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "read", followLast: true}, check, func(j *jail, rel string) (tool.Outcome, error) {
		f, fi, err := j.openRegular(rel, os.O_RDONLY)
		if err != nil {
			return osFailure("read", rel, err), nil
		}
		defer f.Close()
		size := fi.Size()
		if a.Offset > 0 {
			if a.Offset >= size && size > 0 {
				return fail("offset %d is at or past the end of %s (%d bytes)", a.Offset, display(rel), size), nil
			}
			if _, err := f.Seek(a.Offset, io.SeekStart); err != nil {
				return osFailure("read", rel, err), nil
			}
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(a.MaxBytes)))
		if err != nil {
			return osFailure("read", rel, err), nil
		}
		end := a.Offset + int64(len(data))
		more := end < size
		// A cut may split a character at either end; drop the pieces.
		if a.Offset > 0 {
			for i := 0; i < 3 && len(data) > 0 && !utf8.RuneStart(data[0]); i++ {
				data = data[1:]
			}
		}
		if more {
			for i := 0; i < 3 && len(data) > 0 && !utf8.Valid(data); i++ {
				data = data[:len(data)-1]
				end--
			}
		}
		if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
			return fail("%s is not a UTF-8 text file (%d bytes)", display(rel), size), nil
		}
		text := string(data)
		if more {
			text += fmt.Sprintf("\n[file_read: %s has %d bytes; this shows bytes %d to %d; call again with offset %d for more]", display(rel), size, a.Offset, end, end)
		}
		return ok(text), nil
	})
}

type listEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size *int64 `json:"size,omitempty"`
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	default:
		return "other"
	}
}

func fileList(_ context.Context, c *call) (tool.Outcome, error) {
	a := struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
		Pattern   string `json:"pattern"`
		Limit     int    `json:"limit"`
	}{Path: ".", Limit: defaultListLimit}
	check := func() error {
		if a.Path == "" {
			a.Path = "."
		}
		if a.Limit <= 0 {
			a.Limit = defaultListLimit
		}
		if a.Pattern != "" {
			if _, err := path.Match(a.Pattern, ""); err != nil {
				return fmt.Errorf("pattern %q is not a valid glob", a.Pattern)
			}
		}
		return nil
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "list", followLast: true}, check, func(j *jail, rel string) (tool.Outcome, error) {
		fi, err := j.root.Stat(rel)
		if err != nil {
			return osFailure("list", rel, err), nil
		}
		if !fi.IsDir() {
			return fail("%s is not a directory", display(rel)), nil
		}
		entries := []listEntry{}
		truncated := false
		add := func(p string, d fs.DirEntry) bool {
			if j.isGuarded(filepath.FromSlash(p)) {
				// nexa's own files are not listed either.
				return true
			}
			if a.Pattern != "" {
				if m, _ := path.Match(a.Pattern, d.Name()); !m {
					return true
				}
			}
			if len(entries) == a.Limit {
				truncated = true
				return false
			}
			e := listEntry{Path: p, Type: entryType(d.Type())}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					s := info.Size()
					e.Size = &s
				}
			}
			entries = append(entries, e)
			return true
		}
		fsys := j.root.FS()
		start := display(rel)
		if !a.Recursive {
			list, err := fs.ReadDir(fsys, start)
			if err != nil {
				return osFailure("list", rel, err), nil
			}
			sort.Slice(list, func(x, y int) bool { return list[x].Name() < list[y].Name() })
			for _, d := range list {
				if !add(path.Join(start, d.Name()), d) {
					break
				}
			}
		} else {
			err := fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
				if p == start {
					return err
				}
				if err != nil {
					// An unreadable subdirectory is skipped, not fatal.
					if d != nil && d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				if d.IsDir() && j.isGuarded(filepath.FromSlash(p)) {
					return fs.SkipDir
				}
				if !add(p, d) {
					return fs.SkipAll
				}
				return nil
			})
			if err != nil {
				return osFailure("list", rel, err), nil
			}
		}
		return okJSON(map[string]any{"path": start, "entries": entries, "count": len(entries), "truncated": truncated}), nil
	})
}

func fileExists(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Path string `json:"path"`
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "check"}, nil, func(j *jail, rel string) (tool.Outcome, error) {
		fi, err := j.root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return okJSON(map[string]any{"path": display(rel), "exists": false}), nil
		}
		if err != nil {
			return osFailure("check", rel, err), nil
		}
		res := map[string]any{"path": display(rel), "exists": true, "type": entryType(fi.Mode())}
		if fi.Mode().IsRegular() {
			res["size"] = fi.Size()
		}
		return okJSON(res), nil
	})
}

// prepareWrite resolves a path that is about to be modified and refuses
// the working directory itself (resolve refuses nexa's own files).
func (j *jail) prepareWrite(p string, followLast bool) (string, error) {
	rel, err := j.resolve(p, followLast)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", &pathError{fmt.Sprintf("path %q is the working directory itself", p)}
	}
	return rel, nil
}

// mkParents creates the missing parent directories of rel inside the root.
func (j *jail) mkParents(rel string) error {
	dir := filepath.Dir(rel)
	if dir == "." {
		return nil
	}
	return j.root.MkdirAll(dir, 0o755)
}

// putFile creates the missing parent directories of rel, opens it as a
// regular file with flag (os.O_WRONLY|os.O_CREATE, plus os.O_APPEND to
// add at the end; without it the file is emptied first), writes content
// and returns the file's size afterwards (-1 when it cannot be told). A
// failure is the outcome the model reads, worded with verb, and done false.
func (j *jail) putFile(rel, verb string, flag int, content string) (size int64, failure tool.Outcome, done bool) {
	if err := j.mkParents(rel); err != nil {
		return 0, osFailure("create the parent directories of", rel, err), false
	}
	f, _, err := j.openRegular(rel, flag)
	if err != nil {
		return 0, osFailure(verb, rel, err), false
	}
	if flag&os.O_APPEND == 0 {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = io.WriteString(f, content)
	}
	size = -1
	if err == nil {
		if fi, serr := f.Stat(); serr == nil {
			size = fi.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, osFailure(verb, rel, err), false
	}
	return size, tool.Outcome{}, true
}

func fileWrite(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "write", modify: true, followLast: true}, nil, func(j *jail, rel string) (tool.Outcome, error) {
		_, statErr := j.root.Lstat(rel)
		verb := "created"
		if statErr == nil {
			verb = "overwrote"
		}
		if _, failure, done := j.putFile(rel, "write", os.O_WRONLY|os.O_CREATE, a.Content); !done {
			return failure, nil
		}
		return ok(fmt.Sprintf("%s %s (%d bytes)", verb, display(rel), len(a.Content))), nil
	})
}

func fileAppend(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "append to", modify: true, followLast: true}, nil, func(j *jail, rel string) (tool.Outcome, error) {
		size, failure, done := j.putFile(rel, "append to", os.O_WRONLY|os.O_CREATE|os.O_APPEND, a.Content)
		if !done {
			return failure, nil
		}
		return ok(fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(a.Content), display(rel), size)), nil
	})
}

func fileEdit(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Path       string `json:"path"`
		OldText    string `json:"old_text"`
		NewText    string `json:"new_text"`
		ReplaceAll bool   `json:"replace_all"`
	}
	check := func() error {
		if a.OldText == "" {
			return errors.New("old_text must not be empty")
		}
		return nil
	}
	return onPath(c, &a, &a.Path, pathOp{verb: "edit", modify: true, followLast: true}, check, func(j *jail, rel string) (tool.Outcome, error) {
		f, fi, err := j.openRegular(rel, os.O_RDWR)
		if err != nil {
			return osFailure("edit", rel, err), nil
		}
		defer f.Close()
		if fi.Size() > maxEditBytes {
			return fail("%s is too large to edit (%d bytes; the limit is %d)", display(rel), fi.Size(), maxEditBytes), nil
		}
		data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
		if err != nil {
			return osFailure("read", rel, err), nil
		}
		content := string(data)
		n := strings.Count(content, a.OldText)
		switch {
		case n == 0:
			return fail("old_text was not found in %s; nothing was changed (it must match exactly, including whitespace)", display(rel)), nil
		case n > 1 && !a.ReplaceAll:
			return fail("old_text occurs %d times in %s; nothing was changed: include more surrounding text to make it unique, or set replace_all", n, display(rel)), nil
		}
		updated := strings.ReplaceAll(content, a.OldText, a.NewText)
		if _, err = f.Seek(0, io.SeekStart); err == nil {
			if _, err = io.WriteString(f, updated); err == nil {
				err = f.Truncate(int64(len(updated)))
			}
		}
		if err != nil {
			return osFailure("write", rel, err), nil
		}
		if err := f.Close(); err != nil {
			return osFailure("write", rel, err), nil
		}
		return ok(fmt.Sprintf("replaced %d occurrence(s) in %s", n, display(rel))), nil
	})
}

func fileDelete(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	// A link is deleted itself, so its target does not matter.
	return onPath(c, &a, &a.Path, pathOp{verb: "delete", modify: true}, nil, func(j *jail, rel string) (tool.Outcome, error) {
		fi, err := j.root.Lstat(rel)
		if err != nil {
			return osFailure("delete", rel, err), nil
		}
		if fi.IsDir() {
			if !a.Recursive {
				return fail("%s is a directory; set recursive to delete it with everything in it", display(rel)), nil
			}
			if err := j.root.RemoveAll(rel); err != nil {
				return osFailure("delete", rel, err), nil
			}
			return ok(fmt.Sprintf("deleted directory %s and its contents", display(rel))), nil
		}
		if err := j.root.Remove(rel); err != nil {
			return osFailure("delete", rel, err), nil
		}
		return ok("deleted " + display(rel)), nil
	})
}
