//go:build !linux

package mcptool

import "errors"

// stdioSupported refuses MCP servers on stdio: stopping a server's process
// group without the risk of signalling a reused group id needs waitid
// without reaping, which nexa uses on Linux only. MCP servers over HTTP
// work everywhere.
func stdioSupported() error {
	return errors.New("this system cannot run MCP servers on stdio: nexa runs them on Linux only (MCP servers over HTTP work here)")
}
