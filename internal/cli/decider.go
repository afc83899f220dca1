package cli

import "os/user"

// decider names the person behind a decision made from the command line,
// for the journal's audit trail (nexa serve records its operator the same
// way): NEXA_USER when set — a CI pipeline passes the name of whoever
// approved in the CI system — else the account nexa runs as. Empty when
// neither is known; the decision is recorded all the same.
func decider(e *env) string {
	if u := e.getenv("NEXA_USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return e.getenv("USER")
}
