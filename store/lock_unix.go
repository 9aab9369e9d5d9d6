//go:build !windows

package store

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the lock bbolt takes on a store file (flock of the whole
// file), shared or exclusive, without waiting: an error when another
// process holds it.
func tryLock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
}

// unlock releases tryLock's lock.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// lockBusy reports whether tryLock's err says another process holds the lock.
func lockBusy(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }

// openShared opens the store file at path for reading and writing (on
// Unix a rename over an open file needs nothing more).
func openShared(path string) (*os.File, error) { return os.OpenFile(path, os.O_RDWR, 0) }
