package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agent-lsp/agent-lsp/store/internal/boltfile"
	"github.com/agent-lsp/agent-lsp/store/internal/convert"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
)

// LockTimeout is how long Open waits for another process to release the store file.
const LockTimeout = time.Second

// ErrLocked is returned by Open when another process holds the store file.
var ErrLocked = errors.New("store is in use by another agent-lsp process")

// errHeld says another process holds a file: it is its to judge.
var errHeld = errors.New("held by another process")

// fileState is what inspect found of a store file.
type fileState struct {
	size     int64
	format   uint64 // 1 when the file has no format record
	newer    bool   // the file's intact format record is newer than Format
	legacy   bool   // the file has buckets of formats 1 and 2
	problems []boltfile.Problem
}

// inspect checks the store file at path before bbolt maps it: its meta
// pages, every page of its tree, and its layout (convert.Source.Check). A file that
// does not exist or is empty is new (size 0). A file another process holds
// is not read: errHeld.
func inspect(path string) (fileState, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	// A file another process has open for writing is its to judge: its
	// lock makes bolt.Open time out, and the caller says so.
	if err := tryLock(f, false); err != nil {
		return fileState{}, errHeld
	}
	defer unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return fileState{}, err
	}
	st := fileState{size: fi.Size()}
	if st.size == 0 {
		return st, nil
	}
	src, err := convert.Open(path)
	if err != nil {
		st.problems = []boltfile.Problem{{What: err.Error()}}
		return st, nil
	}
	defer src.Close()
	st.format, _ = src.Format()
	st.legacy, st.newer = src.Legacy(), src.Newer()
	if st.newer {
		return st, nil
	}
	st.problems = src.Check()
	return st, nil
}

// openFile opens the store file at path for Open: checked, converted from
// an earlier format, or salvaged when it is damaged. recovered says what a
// salvage kept and lost ("" when none ran); notes what a conversion left
// out.
func openFile(path string) (db *bolt.DB, recovered string, notes []string, err error) {
	st, err := inspect(path)
	switch {
	case errors.Is(err, errHeld):
	case err != nil:
		return nil, "", nil, err
	case st.newer:
		return nil, "", nil, fmt.Errorf("%w (store format %d; this agent-lsp reads formats up to %d)", ErrNewerFormat, st.format, Format)
	case len(st.problems) > 0:
		if recovered, err = salvage(path, convert.DamagedBy(st.problems)); err != nil {
			return nil, "", nil, err
		}
	case st.size > 0 && (st.format < Format || st.legacy):
		if notes, err = upgrade(path); err != nil {
			return nil, "", nil, fmt.Errorf("convert the store to format %d: %w", Format, err)
		}
	}
	db, err = openBolt(path, false)
	var corrupt *CorruptError
	if errors.As(err, &corrupt) && recovered == "" {
		// Damage the inspection could not see (the file changed under it).
		if recovered, err = salvage(path, corrupt.Cause); err != nil {
			return nil, "", nil, err
		}
		db, err = openBolt(path, false)
	}
	if err != nil {
		return nil, "", nil, err
	}
	if err := initBuckets(db, path); err != nil {
		db.Close()
		return nil, "", nil, err
	}
	return db, recovered, notes, nil
}

// openBolt is bolt.Open under the fault guard, with its corruption errors
// (and ErrTimeout: ErrLocked) as the store's.
//
// An open that panicked leaves bbolt's memory map of the file behind, and
// with it the file's lock (the map holds the open file): nothing can
// release them until the process exits, and a salvage then fails with
// ErrLocked. inspect, which reads the file without bbolt first, is what
// keeps bbolt from meeting such a file; only a file that changes between
// the two can.
func openBolt(path string, readOnly bool) (db *bolt.DB, err error) {
	err = guarded(path, func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: LockTimeout, ReadOnly: readOnly})
		return err
	})
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		return nil, err
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w (waited %s)", ErrLocked, LockTimeout)
	}
	for _, bad := range []error{berrors.ErrInvalid, berrors.ErrVersionMismatch, berrors.ErrChecksum, berrors.ErrInvalidMapping} {
		if errors.Is(err, bad) {
			return nil, &CorruptError{Path: path, Cause: err.Error()}
		}
	}
	return db, err
}

// initBuckets creates the top-level buckets of a new file and its format
// record, under the fault guard.
func initBuckets(db *bolt.DB, path string) error {
	return guarded(path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{layout.Approvals, layout.Meta} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			meta := tx.Bucket(layout.Meta)
			if meta.Get(layout.FormatKey) != nil {
				return nil // checked by inspect, converted by upgrade
			}
			rec, sum := layout.FormatRecords(Format)
			if err := meta.Put(layout.FormatKey, rec); err != nil {
				return err
			}
			return meta.Put(layout.FormatSumKey, sum)
		})
	})
}

// OpenReadOnly opens the store file at path for reading: it never writes,
// converts, compacts or moves the file, and writes to the store it returns
// fail with ErrReadOnly. A file of an earlier format, or a damaged one, is
// read through a copy in the temporary directory (converted, or salvaged),
// which Close removes; reading a damaged file counts as damage met (Damage) and
// says so (WithWarn). A missing file reads as an empty store. Another
// process holding the file for writing makes it fail with ErrLocked.
func OpenReadOnly(path string, opts ...Option) (*Bolt, error) {
	b := newBolt(path, opts)
	b.readOnly = true
	fail := func(err error) (*Bolt, error) { return nil, fmt.Errorf("open store %s: %w", path, err) }
	st, err := inspect(path)
	for deadline := time.Now().Add(LockTimeout); errors.Is(err, errHeld) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		st, err = inspect(path)
	}
	if errors.Is(err, errHeld) {
		return fail(fmt.Errorf("%w (waited %s)", ErrLocked, LockTimeout))
	}
	if err != nil {
		return fail(err)
	}
	if st.newer {
		return fail(fmt.Errorf("%w (store format %d; this agent-lsp reads formats up to %d)", ErrNewerFormat, st.format, Format))
	}
	view := path
	switch {
	case st.size == 0:
		view, b.release, err = tempView(func(tmp string) error { return createEmpty(tmp) })
	case len(st.problems) > 0:
		var rep convert.Report
		view, b.release, err = tempView(func(tmp string) error {
			var err error
			rep, err = copyStore(path, tmp)
			return err
		})
		if err == nil {
			for _, p := range st.problems {
				b.opened = append(b.opened, "the file's pages: "+convert.Describe(p))
			}
			b.damaged("", "", damage{what: "the store file", err: fmt.Errorf("%w: %s; this command read what could be salvaged (%s), and the file was left as it is: a command that writes (agent-lsp sessions compact) or the next start of agent-lsp moves it aside and keeps what can be read", ErrDamaged, convert.DamagedBy(st.problems), rep.String())})
		}
	case st.legacy || st.format < Format:
		// An earlier format is read through a converted copy: the store
		// reads only its own format (store/internal/convert reads the rest).
		view, b.release, err = tempView(func(tmp string) error {
			_, err := copyStore(path, tmp)
			return err
		})
	}
	if err != nil {
		return fail(err)
	}
	if b.db, err = openBolt(view, true); err != nil {
		if b.release != nil {
			b.release()
		}
		return fail(err)
	}
	b.startCommitter()
	return b, nil
}

// tempView makes a file in the temporary directory with fill, and returns
// its path and a function that removes it.
func tempView(fill func(tmp string) error) (string, func(), error) {
	dir, err := os.MkdirTemp("", "agent-lsp-store-")
	if err != nil {
		return "", nil, err
	}
	release := func() { os.RemoveAll(dir) }
	tmp := filepath.Join(dir, "view.db")
	if err := fill(tmp); err != nil {
		release()
		return "", nil, err
	}
	return tmp, release, nil
}

// createEmpty creates an empty store file at path.
func createEmpty(path string) error {
	db, err := openBolt(path, false)
	if err != nil {
		return err
	}
	if err := initBuckets(db, path); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// lockFile opens the file at path and takes its exclusive lock, waiting up
// to LockTimeout for another process to release it.
func lockFile(path string) (*os.File, error) {
	f, err := openShared(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(LockTimeout)
	for {
		err := tryLock(f, true)
		if err == nil {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (waited %s)", ErrLocked, LockTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// salvage copies what the damaged store file at path still holds into a
// new file, moves the damaged one aside and puts the new one in its record.Place,
// and says what it kept and lost. cause says why the file is damaged.
func salvage(path, cause string) (string, error) {
	lock, err := lockFile(path)
	if err != nil {
		return "", fmt.Errorf("store %s is damaged (%s), and it cannot be salvaged: %w", path, cause, err)
	}
	defer lock.Close()
	tmp := path + ".salvage"
	rep, err := copyStore(path, tmp)
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("store %s is damaged (%s), and salvaging it failed: %w", path, cause, err)
	}
	aside, err := moveAside(path, time.Now())
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("store %s is damaged (%s); moving it aside failed: %w", path, cause, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("store %s is damaged (%s); it was moved to %s, but its salvaged copy %s could not take its place: %w", path, cause, aside, tmp, err)
	}
	syncDir(filepath.Dir(path))
	return fmt.Sprintf("store %s is damaged (%s): what could still be read was salvaged (%s), and the damaged file was moved to %s", path, cause, rep.String(), aside), nil
}

// upgrade converts the store file at path, of an earlier format, to this
// one: a converted copy is written next to it and renamed over it, so a
// crash leaves one or the other whole. It returns what the conversion left
// out.
func upgrade(path string) ([]string, error) {
	lock, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	tmp := path + ".converting"
	rep, err := copyStore(path, tmp)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if runtime.GOOS == "windows" {
		// Windows replaces no file that is open, even one shared for
		// deletion: the lock goes first. Another process that opens the
		// old file meanwhile makes the rename fail (said, tried again at the
		// next open), or converts it again from the same content.
		lock.Close()
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	syncDir(filepath.Dir(path))
	var notes []string
	for _, l := range rep.Left {
		notes = append(notes, "converting the store: "+l)
	}
	return notes, nil
}

// copyStore writes what the store file at src holds (any format, damaged or
// not) into a new store file at dst, in this format, synced.
func copyStore(src, dst string) (convert.Report, error) {
	var rep convert.Report
	os.Remove(dst)
	db, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: LockTimeout, NoSync: true})
	if err != nil {
		return rep, err
	}
	if err := initBuckets(db, dst); err != nil {
		db.Close()
		return rep, err
	}
	s, err := convert.Open(src)
	if err == nil {
		rep, err = writeSource(context.Background(), s, db)
		s.Close()
	} else if errors.Is(err, boltfile.ErrNoMeta) {
		rep.Problems, err = []string{err.Error()}, nil // nothing can be found in it
	}
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return rep, err
}

// writeSource copies every session and approval of s into the new store
// db, in transactions of about importBatchBytes.
func writeSource(ctx context.Context, s *convert.Source, db *bolt.DB) (convert.Report, error) {
	var rep convert.Report
	approvals, lost := s.Approvals()
	rep.Left = append(rep.Left, lost...)
	err := guarded(db.Path(), func() error {
		return db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(layout.Approvals)
			for _, e := range approvals {
				if err := bk.Put(e.Key, e.Value); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return rep, err
	}
	var batch []convert.Session
	var size int64
	flush := func() error {
		err := guarded(db.Path(), func() error {
			return db.Update(func(tx *bolt.Tx) error {
				for _, sc := range batch {
					for _, fb := range sc.Buckets {
						if err := convert.Paste(tx, fb); err != nil {
							return fmt.Errorf("session %q: %w", sc.ID, err)
						}
					}
				}
				return nil
			})
		})
		batch, size = nil, 0
		return err
	}
	err = s.Sessions(ctx, func(sc convert.Session) error {
		rep.Add(&sc)
		batch, size = append(batch, sc), size+sc.Size
		if size >= importBatchBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	s.Unreached()
	rep.Problems = s.Unattributed()
	return rep, err
}

// HeldByAnother reports whether another process holds the store file's
// lock (bbolt's), probing with a shared lock released at once. A file that
// cannot be opened is not held.
func HeldByAnother(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := tryLock(f, false); err != nil {
		return lockBusy(err)
	}
	unlock(f)
	return false
}
