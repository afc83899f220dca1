// Package ir holds the compiled form of a Nexa program: the Program, its
// tools with their parameters and bodies, agents and protocols. The
// compiler (internal/compile) produces these values from source; the
// runtime and its executors read them and nothing else, so that running a
// program never needs the parser. The package imports only the standard
// library, which keeps it a leaf every other package can depend on.
//
// The encodings here (CanonicalJSON, the JSON forms of native bodies, the
// parameters schema of a tool) feed the program hash that runs store, so
// they must not change without a new hash version.
package ir
