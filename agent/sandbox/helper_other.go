//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// Elsewhere than Linux there is no Landlock: nothing is confined, and the
// helper never runs.

func runHelper(o *opts) error { return errors.New("the sandbox helper runs only on Linux") }

func nsAttr(bool) *syscall.SysProcAttr { return sessionAttr() }

func probe(string) (Isolation, error) { return Snapshot, errors.New("namespaces need Linux") }

type cgroups struct{}

func (c *cgroups) create(int) (string, error) { return "", nil }
func (c *cgroups) remove(string)              {}
func (c *cgroups) bound() string              { return "" }
