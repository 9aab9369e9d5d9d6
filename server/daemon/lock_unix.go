//go:build !windows

package daemon

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's exclusive lock without waiting; busy when another
// process holds it.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// unlockFile releases tryLock's lock.
func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
