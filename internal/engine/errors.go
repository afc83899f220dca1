package engine

import (
	"errors"
	"fmt"
)

// Stable error codes of the JSON error object docs/reference/json.md#error-codes. Scripts match on
// these, so they never change meaning.
const (
	CodeUsage              = "usage_error"
	CodeCompile            = "compile_error"
	CodeRunNotFound        = "run_not_found"
	CodeTaskWithResume     = "task_with_resume"
	CodeSourceChanged      = "source_changed"
	CodeAgentChanged       = "agent_changed"
	CodeProviderChanged    = "provider_changed"
	CodeBudgetsChanged     = "budgets_changed"
	CodeWorkDirChanged     = "workdir_changed"
	CodeToolsChanged       = "tools_changed"
	CodeNotWaiting         = "not_waiting"
	CodeNotPending         = "not_pending"
	CodeUnknownCall        = "unknown_call"
	CodeNotStarted         = "not_started"
	CodeCheckpointConflict = "checkpoint_conflict"
	CodeDeadlineExceeded   = "deadline_exceeded"
	CodeBudgetExhausted    = "budget_exhausted"
	CodeSandboxUnavailable = "sandbox_unavailable"
	CodeProviderError      = "provider_error"
	CodeUnknownOutcome     = "unknown_outcome"
	CodeInterrupted        = "interrupted"
	CodeOutputInvalid      = "output_invalid"
	CodeStoreError         = "store_error"
	// CodeNoStore: a command that only reads found no store (it never
	// creates one); nexa agent --resume reports it as run_not_found.
	CodeNoStore   = "no_store"
	CodeToolClash = "tool_name_clash"
	// CodePolicyChanged: a resume names another policy than the run was
	// started under (or none); CodeInvalidEdit: arguments a person edited
	// failed the checks the model's pass, and nothing was recorded.
	CodePolicyChanged = "policy_changed"
	// CodePolicy: the policy file named by --policy or NEXA_POLICY cannot
	// be read or is not a valid policy; nothing was run.
	CodePolicy      = "policy_error"
	CodeInvalidEdit = "invalid_edit"
	// CodeInvalidResponse: an answer to a call's input request does not
	// fit the request (a form's schema, a URL's "done").
	CodeInvalidResponse = "invalid_response"
	CodeMCPError        = "mcp_error"
	// CodeMCPAuthRequired: an HTTP MCP server asks for an authorization
	// nexa cannot give in a run (no client credentials configured, or
	// refused); nothing interactive is tried and nothing was written.
	CodeMCPAuthRequired = "mcp_auth_required"
	CodeInternal        = "internal_error"
)

// Error is an error a user sees: a stable code and a message written for a
// person. Refusal marks errors detected before anything was written (the
// CLI maps them to exit code 2).
type Error struct {
	Code    string
	Message string
	Refusal bool
	Err     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes the cause for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// refuse builds a refusal: nothing was written.
func refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Refusal: true}
}

// AsError extracts a runtime *Error from err, if there is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
