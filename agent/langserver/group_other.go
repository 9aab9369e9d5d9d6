//go:build !unix

package langserver

import (
	"os"
	"os/exec"
)

// ownGroup does nothing here: without process groups, stopping a server
// kills the server's own process only (its children may outlive it).
func ownGroup(*exec.Cmd) {}

// killGroup does nothing here; the caller kills p itself.
func killGroup(*os.Process) {}
