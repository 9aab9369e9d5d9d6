//go:build !unix

package main

// leaveTerminal does nothing where there are no controlling terminals.
func leaveTerminal() error { return nil }
