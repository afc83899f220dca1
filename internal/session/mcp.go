package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nexa-run/nexa/internal/duration"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/tools/mcptool"
)

// agentTools is what an agent exposes once its MCP servers are connected.
type agentTools struct {
	// agent is the agent with MCP placeholders (legacy `tool X { mcp }`
	// blocks, which stand for a whole server) removed from its tools.
	agent *ir.Agent
	// extra are the servers' tools.
	extra []*ir.Tool
	mgr   *mcptool.Manager
	log   io.Closer
}

// mcpSpecs are the MCP servers an agent uses, directly (uses mcp:"…") or
// through legacy tool blocks, without duplicates, in a stable order.
func mcpSpecs(prog *ir.Program, agent *ir.Agent) []string {
	seen := map[string]bool{}
	var specs []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			specs = append(specs, s)
		}
	}
	for _, u := range agent.Uses {
		if u.Kind == ir.UseMCP {
			add(u.Name)
		}
	}
	for _, name := range agent.Tools {
		if t := prog.Tool(name); t != nil && t.Body.Kind == ir.BodyMCP {
			add(t.Body.MCP)
		}
	}
	sort.Strings(specs)
	return specs
}

// connectMCP starts the agent's MCP servers and lists their tools. An agent
// without servers gets back its own declaration untouched.
//
// The servers' stderr and SDK warnings go to the log at logPath through
// the run's redactor; $NAME in a server's VAR=value assignments resolves
// from the secrets tools may read. Connecting is bounded by connectTimeout
// and by the run's deadline (nil: none), whichever comes first, so a server
// that never answers cannot hold the run forever.
func connectMCP(ctx context.Context, prog *ir.Program, agent *ir.Agent, wd, logPath, version string, sec *secretSet, connectTimeout time.Duration, deadline *time.Time) (*agentTools, error) {
	specs := mcpSpecs(prog, agent)
	at := &agentTools{agent: agent}
	if len(specs) == 0 {
		return at, nil
	}
	var log io.Writer
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err == nil {
		if fh, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			rl := &redactedLog{WriteCloser: sec.redactor.Writer(fh), file: fh}
			log, at.log = rl, rl
		}
	}
	if deadline != nil && time.Now().Before(*deadline) {
		// (A passed deadline is the resume's to report: timed_out.)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, *deadline)
		defer cancel()
	}
	mgr := mcptool.NewManager(mcptool.Options{WorkDir: wd, Log: log, Secret: sec.lookupToolSecret(), ClientName: "nexa", ClientVersion: or(version, "dev"), ConnectTimeout: connectTimeout})
	if err := mgr.Connect(ctx, specs...); err != nil {
		mgr.Close()
		at.close()
		return nil, err
	}
	at.mgr = mgr
	at.extra = mgr.Tools()
	filtered := *agent
	filtered.Tools = nil
	for _, name := range agent.Tools {
		if t := prog.Tool(name); t != nil && t.Body.Kind == ir.BodyMCP {
			continue
		}
		filtered.Tools = append(filtered.Tools, name)
	}
	at.agent = &filtered
	return at, nil
}

// mcpConnectTimeout reads NEXA_MCP_CONNECT_TIMEOUT (seconds or a duration);
// unset means mcptool.DefaultConnectTimeout.
func mcpConnectTimeout(e Env) (time.Duration, error) {
	v := e.getenv("NEXA_MCP_CONNECT_TIMEOUT")
	if v == "" {
		return mcptool.DefaultConnectTimeout, nil
	}
	if d, err := duration.Parse(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("NEXA_MCP_CONNECT_TIMEOUT takes %s (positive), not %q", duration.Forms, v)
}

func (at *agentTools) close() {
	if at == nil {
		return
	}
	if at.mgr != nil {
		at.mgr.Close()
	}
	if at.log != nil {
		at.log.Close()
	}
}

// lookup finds a tool among the program's and the servers'.
func (at *agentTools) lookup(prog *ir.Program) func(string) *ir.Tool {
	return func(name string) *ir.Tool {
		if at != nil {
			for _, t := range at.extra {
				if t.Name == name {
					return t
				}
			}
		}
		if prog == nil {
			return nil
		}
		return prog.Tool(name)
	}
}
