//go:build !windows

package boltfile

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only. The map outlives f.
func mapFile(f *os.File, size int) (mem []byte, unmap func() error, err error) {
	mem, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() error { return syscall.Munmap(mem) }, nil
}
