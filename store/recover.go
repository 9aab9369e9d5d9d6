package store

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// CorruptError is a store file bbolt cannot read.
type CorruptError struct {
	Path  string
	Cause string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s", e.Path, e.Cause)
}

// openBolt is bolt.Open that turns bbolt's panics on a damaged file (it
// panics in Open on a truncated one) and its corruption errors into a
// CorruptError. bbolt's file handle of a failed open is left to its
// finalizer, which releases the file lock; nothing else closes it.
func openBolt(path string) (db *bolt.DB, err error) {
	defer func() {
		if v := recover(); v != nil {
			db, err = nil, &CorruptError{Path: path, Cause: fmt.Sprint(v)}
			runtime.GC() // let the abandoned file's finalizer close it
		}
	}()
	if err := checkMeta(path); err != nil {
		return nil, &CorruptError{Path: path, Cause: err.Error()}
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: LockTimeout})
	for _, corrupt := range []error{berrors.ErrInvalid, berrors.ErrVersionMismatch, berrors.ErrChecksum, berrors.ErrInvalidMapping} {
		if errors.Is(err, corrupt) {
			return nil, &CorruptError{Path: path, Cause: err.Error()}
		}
	}
	return db, err
}

// moveAside renames a damaged store to <path>.corrupt-<time>, keeping it for
// inspection, and returns the new name.
func moveAside(path string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// guard turns a panic of bbolt while reading or writing a damaged file into an
// error, so one bad page fails one call instead of the process.
func guard(path string, err *error) {
	if v := recover(); v != nil {
		*err = &CorruptError{Path: path, Cause: fmt.Sprint(v)}
	}
}
