//go:build windows

package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is the one byte locked: the last of the largest file, so the
// lock (mandatory on Windows) never stops the daemon writing its record
// into the file while a starter holds it.
func lockRange() *windows.Overlapped {
	const m1 = 1<<32 - 1
	return &windows.Overlapped{Offset: m1, OffsetHigh: m1}
}

// tryLock takes f's exclusive lock without waiting; busy when another
// process holds it.
func tryLock(f *os.File) (busy bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// unlockFile releases tryLock's lock.
func unlockFile(f *os.File) { windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRange()) }
