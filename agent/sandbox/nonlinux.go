//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// Elsewhere than Linux there are no namespaces, no Landlock and no pids
// cgroup: macOS has Seatbelt (seatbelt.go), Windows Job Objects (job.go).

func nsAttr(bool) *syscall.SysProcAttr { return sessionAttr() }

func probe(string) (Isolation, error) { return Snapshot, errors.New("namespaces need Linux") }

type cgroups struct{}

func (c *cgroups) create(int) (string, error) { return "", nil }
func (c *cgroups) remove(string)              {}
func (c *cgroups) bound() string              { return "" }
