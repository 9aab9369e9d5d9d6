//go:build !windows

package main

import "syscall"

// Access modes of access(2).
const (
	accessX = 0x1
	accessW = 0x2
)

// access checks that this user may use path as mode says (access(2)).
func access(path string, mode uint32) error { return syscall.Access(path, mode) }
