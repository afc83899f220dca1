// Package docscheck holds tests that keep the install and CI recipes
// honest: the YAML of docs/ci.md parses and runs only real nexa commands
// and flags, the Dockerfile has the stages and non-root user the docs
// promise, and `make dist` builds what it says. A recipe a user copies
// must not rot silently when a flag is renamed.
package docscheck
