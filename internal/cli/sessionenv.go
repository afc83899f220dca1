package cli

import "github.com/nexa-run/nexa/internal/session"

// sessionEnv is what the assembly reads of this command's environment.
func sessionEnv(e *env) session.Env {
	return session.Env{Getenv: e.getenv, Environ: e.environ, Version: Version, Tracing: e.tracing}
}
