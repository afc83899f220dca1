package builtin

import (
	"encoding/json"
	"errors"
	"github.com/nexa-run/nexa/internal/tool"
)

// The built-in executor answers hopeless calls before approval.
var _ tool.Prechecker = (*Executor)(nil)

// pathCheck is how a file tool checks its path argument before acting.
type pathCheck struct {
	write      bool // the tool modifies the path: prepareWrite
	followLast bool // a symbolic link as the last component is followed
	defaultDot bool // an empty path means the working directory
}

// pathChecks are the file tools whose path argument can be refused without
// touching anything, with the same check each applies when it runs.
var pathChecks = map[string]pathCheck{
	"file_read":   {followLast: true},
	"file_list":   {followLast: true, defaultDot: true},
	"file_exists": {},
	"file_write":  {write: true, followLast: true},
	"file_append": {write: true, followLast: true},
	"file_edit":   {write: true, followLast: true},
	"file_delete": {write: true},
}

// Precheck refuses a file-tool call whose path the tool would refuse when
// run (outside the working directory, through a link leading out, the run
// store, …), so that nobody is asked to approve a call that cannot do
// anything. It runs the tool's own path check, so a refusal added to that
// check applies here too. A path that is merely missing is not refused: it
// may exist by the time the call runs.
func (e *Executor) Precheck(inv tool.Invocation) error {
	if inv.Tool == nil {
		return nil
	}
	pc, ok := pathChecks[inv.Tool.Name]
	if !ok {
		return nil
	}
	var a struct {
		Path *string `json:"path"`
	}
	if err := json.Unmarshal(inv.Arguments, &a); err != nil || a.Path == nil {
		return nil // the tool reports its arguments itself
	}
	p := *a.Path
	if p == "" && pc.defaultDot {
		p = "."
	}
	j, err := openJail(inv.WorkDir, e.opts.Protected)
	if err != nil {
		return nil // nothing can run; Execute says so
	}
	defer j.Close()
	if pc.write {
		_, err = j.prepareWrite(p, pc.followLast)
	} else {
		_, err = j.resolve(p, pc.followLast)
	}
	var pe *pathError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
