//go:build !linux

package main

// applyChildEnv: the edit under RLIMIT_FSIZE is tested on Linux only
// (atomic_linux_test.go); no child is started with it elsewhere.
const applyChildEnv = "AGENT_LSP_TEST_APPLY_EDIT"

func applyChild(string) int { return 2 }
