package state

// RunLog is one log a store keeps for a run beside its rows: what the run's
// tools or its MCP servers printed (secret values were removed before it
// was written). It is a type of its own so that an exported run can carry
// its logs to another store.
type RunLog struct {
	// Name is LogTools or LogMCP.
	Name string `json:"name"`
	// Data is the log as written, byte for byte (base64 in JSON: a tool
	// may print bytes that are not UTF-8).
	Data []byte `json:"data"`
}

// The names of a run's logs.
const (
	LogTools = "tools"
	LogMCP   = "mcp"
)
