package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/convert"
	"github.com/agent-lsp/agent-lsp/store/internal/layout"
)

// importBatchBytes bounds the bytes of session data Import gathers in memory
// before writing them to the store in one transaction.
const importBatchBytes = 16 << 20

// ImportedSuffix is appended to a sibling store file's name once
// ImportSiblings has imported it, so that it is imported only once.
const ImportedSuffix = ".imported"

// Import copies into b the sessions of the store file at path that b does not
// have yet and returns how many it copied.
//
// Invariants:
//   - path is read, never mapped and never modified; another process
//     holding it open for writing makes Import fail with an error wrapping
//     ErrLocked after LockTimeout, instead of waiting.
//   - A damaged file never panics, faults or hangs the process: it is read
//     page by page (store/internal/boltfile), and every page of its tree is
//     checked (in the file, reached once, well formed, keys in order) before
//     anything is copied. Damage to its pages makes Import fail with an
//     error wrapping *CorruptError before anything is written to b. A record
//     whose seal fails (a file of format 4), or that cannot be decoded, is
//     left out and named through WithWarn; damage inside a record of an
//     earlier format, which had no checksums, cannot always be seen.
//   - A session is copied whole, in one transaction: its record and every
//     namespace (values, list items, pending writes, the sequence), so it
//     loads as it loaded from path and its lists go on numbering where they
//     left off. Records are sealed for this format; one of formats 1 and 2
//     is converted as Open converts one (upgrade), leaving out, and
//     reporting through WithWarn, what cannot be converted.
//   - Only sessions with a session record are copied. A session whose ID b
//     already has (a bucket of any of its namespaces) is skipped: b's
//     version is kept. Import is thus idempotent, and a second Import of
//     the same file returns 0.
//   - When Import returns nil, the copied sessions are durable in b,
//     whatever b's durability mode. Sessions are written in transactions of at
//     most about 16 MiB; if a later one fails, the earlier ones stay and
//     the count says how many.
//
// Import should run before b serves the sessions it may copy: a session that
// a run is writing in Exit mode (held in memory, not yet in b) is not seen as
// present.
func (b *Bolt) Import(ctx context.Context, path string) (sessions int, err error) {
	return b.importFile(ctx, path, nil)
}

// importFile is Import; after, when set, runs once everything is copied,
// while path is still open (and share-locked), so that a process of an
// earlier agent-lsp waiting to write to path cannot slip in between the copy
// and after's rename.
func (b *Bolt) importFile(ctx context.Context, path string, after func()) (n int, err error) {
	n, err = b.importLocked(ctx, path, after)
	if err != nil {
		return n, fmt.Errorf("import sessions from %s: %w", path, err)
	}
	return n, nil
}

func (b *Bolt) importLocked(ctx context.Context, path string, after func()) (n int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if b.readOnly {
		return 0, ErrReadOnly
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("not a regular file")
	}
	if own, err := os.Stat(b.path); err == nil && os.SameFile(fi, own) {
		return 0, fmt.Errorf("it is the store's own file")
	}
	f, err := shareLock(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return 0, err
	}
	if fi.Size() == 0 {
		// bbolt writes its meta pages as it creates a file: an empty one was
		// never initialized and holds no session.
		if after != nil {
			if runtime.GOOS == "windows" {
				f.Close() // Windows renames no open file
			}
			after()
		}
		return 0, nil
	}
	src, err := convert.Open(path)
	if err != nil {
		return 0, &CorruptError{Path: path, Cause: err.Error()}
	}
	closeSrc := sync.OnceValue(src.Close)
	defer closeSrc()
	if src.Newer() {
		f, _ := src.Format()
		return 0, fmt.Errorf("%w (store format %d; this agent-lsp reads formats up to %d)", ErrNewerFormat, f, Format)
	}
	if problems := src.Check(); len(problems) > 0 {
		return 0, &CorruptError{Path: path, Cause: convert.DamagedBy(problems)}
	}
	have, err := b.sessionIDs()
	if err != nil {
		return 0, err
	}
	if n, err = b.importSessions(ctx, src, have); err != nil {
		return n, err
	}
	if after != nil {
		if runtime.GOOS == "windows" {
			// Windows renames no file that is open or mapped: the sibling
			// is let go first (its sessions are in b already).
			closeSrc()
			f.Close()
		}
		after()
	}
	return n, nil
}

// importSessions writes the sessions of src that have a session record and
// are not in have into b, in batches of about importBatchBytes.
func (b *Bolt) importSessions(ctx context.Context, src *convert.Source, have map[string]bool) (n int, err error) {
	var batch []convert.Session
	var size int64
	flush := func() error {
		k, err := b.writeImported(batch)
		n += k
		batch, size = nil, 0
		return err
	}
	err = src.Sessions(ctx, func(sc convert.Session) error {
		if !sc.Record || have[string(sc.ID)] {
			return nil
		}
		for _, l := range sc.Left {
			b.warn(fmt.Sprintf("importing session %q: %s", sc.ID, l))
		}
		batch, size = append(batch, sc), size+sc.Size
		if size >= importBatchBytes {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	return n, err
}

// shareLock opens the file at path and takes its shared lock, waiting up to
// LockTimeout for a process that writes it to let go.
func shareLock(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(LockTimeout)
	for {
		if err := tryLock(f, false); err == nil {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (waited %s)", ErrLocked, LockTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessionIDs returns the IDs of the threads b has.
func (b *Bolt) sessionIDs() (map[string]bool, error) {
	if err := b.Flush(); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	err := b.view(func(tx *bolt.Tx) error {
		return forEachThread(tx, func(id string, _ *bolt.Bucket) error {
			have[id] = true
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list the store's sessions: %w", err)
	}
	return have, nil
}

// writeImported writes the sessions of batch that b does not have, in one
// durable transaction, and returns how many it wrote.
func (b *Bolt) writeImported(batch []convert.Session) (int, error) {
	var n int
	err := b.submit(func(tx *bolt.Tx) error {
		n = 0 // the committer may run this twice: alone after a failed group
		for _, s := range batch {
			prefix := layout.ThreadBucketPrefix(string(s.ID))
			if k, _ := tx.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
				if t, _, ok := layout.ParseThreadBucket(k); ok && t == string(s.ID) {
					continue // written since the IDs were listed: b's version is kept
				}
			}
			for _, fb := range s.Buckets {
				if err := convert.Paste(tx, fb); err != nil {
					return fmt.Errorf("session %q: %w", s.ID, err)
				}
			}
			n++
		}
		return nil
	}, true)
	if err != nil {
		return 0, fmt.Errorf("write %d sessions: %w", len(batch), err)
	}
	return n, nil
}

// IsSiblingStore reports whether name (a base name) is a sibling store file
// of the store file main: in main's directory, main's base name without its
// extension, a dot, exactly 8 lowercase hexadecimal digits, then main's
// extension ("sessions.db" -> "sessions.1a2b3c4d.db"). Earlier versions kept
// a window's sessions there when another process held main.
func IsSiblingStore(main, name string) bool {
	base := filepath.Base(main)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext) + "."
	if len(name) != len(stem)+8+len(ext) || !strings.HasPrefix(name, stem) || !strings.HasSuffix(name, ext) {
		return false
	}
	for _, c := range name[len(stem) : len(stem)+8] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ImportSiblings imports into b the sessions of every sibling store file of
// b.Path() (see IsSiblingStore) and returns how many sessions it imported,
// with one note per problem, a sentence meant for the user.
//
// Invariants:
//   - It never fails: a sibling that cannot be imported (held by another
//     process, damaged, unreadable) is left in record.Place, untouched, and named in
//     a note saying why; the next call tries it again.
//   - A sibling imported in full is renamed to <name>.imported (or
//     <name>.imported.2, ... if that exists), while still share-locked (on
//     Windows, which renames no open file, just after it is let go), so
//     that it is imported once and kept for inspection. If the rename fails, a
//     note says so; a later call imports nothing new from it (Import skips
//     sessions b has) and tries the rename again.
//   - Files whose names merely resemble a sibling's (sessions.db.bak,
//     sessions.xyz.db, sessions.1A2B3C4D.db) and entries other than regular
//     files are not touched.
func ImportSiblings(ctx context.Context, b *Bolt) (imported int, notes []string) {
	dir := filepath.Dir(b.Path())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, []string{fmt.Sprintf("Sessions kept beside the store by earlier versions were not looked for: the folder %s cannot be read (%v).", dir, err)}
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !IsSiblingStore(b.Path(), e.Name()) {
			continue
		}
		if ctx.Err() != nil {
			notes = append(notes, fmt.Sprintf("Importing the sessions kept beside the store was cut short (%v); the rest is tried next time.", ctx.Err()))
			return imported, notes
		}
		path := filepath.Join(dir, e.Name())
		var renameErr error
		n, err := b.importFile(ctx, path, func() { _, renameErr = renameImported(path) })
		imported += n
		switch {
		case err != nil:
			notes = append(notes, siblingNote(path, n, err))
		case renameErr != nil:
			notes = append(notes, fmt.Sprintf("The sessions kept in %s were imported (%d new), but the file could not be renamed (%v); it is checked again next time and nothing is imported twice.", path, n, renameErr))
		}
	}
	return imported, notes
}

// siblingNote says why the sibling at path was not imported.
func siblingNote(path string, n int, err error) string {
	var why string
	var corrupt *CorruptError
	switch {
	case errors.Is(err, ErrLocked):
		why = "another agent-lsp process is using it"
	case errors.As(err, &corrupt):
		why = "it is damaged: " + corrupt.Cause
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		why = "the import was cut short"
	default:
		why = err.Error()
	}
	partial := ""
	if n > 0 {
		partial = fmt.Sprintf(" (%d of its sessions were imported before that)", n)
	}
	return fmt.Sprintf("The sessions kept in %s were not imported because %s%s; the file is left in place and tried again next time.", path, why, partial)
}

// renameImported renames an imported sibling to <path>.imported, or
// <path>.imported.N when that exists, and returns the new name.
func renameImported(path string) (string, error) {
	to := path + ImportedSuffix
	for i := 2; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 100 {
			return "", fmt.Errorf("%s and 99 numbered variants exist", to)
		}
		to = fmt.Sprintf("%s%s.%d", path, ImportedSuffix, i)
	}
	if err := os.Rename(path, to); err != nil {
		return "", err
	}
	return to, nil
}
