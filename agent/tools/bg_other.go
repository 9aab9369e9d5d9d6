//go:build !linux

package tools

import (
	"os/exec"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// dieWithServer does nothing here: the system has no parent-death signal
// (a background process of a server that crashes outlives it).
func dieWithServer(*exec.Cmd, sandbox.Isolation) {}
