//go:build windows

package store

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// lockRange is the byte range bbolt locks on Windows (its flock in
// bolt_windows.go): the last byte of the largest file, one byte, which no
// read or write of the data ever touches. Taking the same range makes the
// store's own locks and bbolt's exclude each other as flock does on Unix.
func lockRange() *windows.Overlapped {
	const m1 = 1<<32 - 1
	return &windows.Overlapped{Offset: m1, OffsetHigh: m1}
}

// tryLock takes the lock bbolt takes on a store file, shared or exclusive,
// without waiting: an error when another process holds it.
func tryLock(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, lockRange())
}

// unlock releases tryLock's lock.
func unlock(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRange())
}

// lockBusy reports whether tryLock's err says another process holds the lock.
func lockBusy(err error) bool { return errors.Is(err, windows.ERROR_LOCK_VIOLATION) }

// openShared opens the store file at path for reading and writing, letting
// it be renamed or replaced while open (FILE_SHARE_DELETE, which Go's
// os.OpenFile does not ask for): a conversion or a salvage renames over
// the file it holds locked, as on Unix.
func openShared(path string) (*os.File, error) {
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ|syscall.GENERIC_WRITE,
		syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE, nil, syscall.OPEN_EXISTING, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
