package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
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
//   - path is opened read-only and is never modified; another process holding
//     it open for writing makes Import fail with an error wrapping ErrLocked
//     after LockTimeout, instead of waiting.
//   - A damaged file never panics, faults or hangs the process: a file cut
//     short is refused before it is mapped, its page tree is checked (pages
//     in the file, each reached once, elements within their pages) before
//     bbolt walks it, and a bbolt panic or memory fault while reading it is
//     turned into an error. Such damage makes Import fail with an error
//     wrapping *CorruptError before anything is written to b. Damage inside a
//     key or value cannot be seen (bbolt keeps no checksums of them) and is
//     copied as it is; the store skips such records when it reads them.
//   - A session is copied whole, in one transaction: its record and every
//     namespace (values, list items, pending writes, the sequence), so it
//     loads as it loaded from path and its lists go on numbering where they
//     left off. A file of the current format is copied byte for byte; one
//     of formats 1 and 2 is converted as Open converts one (migrate.go),
//     leaving out, and reporting through WithWarn, what cannot be converted.
//   - A session whose ID b already has (a bucket of any of its namespaces) is
//     skipped: b's version is kept. Import is thus idempotent, and a second
//     Import of the same file returns 0.
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
	if fi.Size() == 0 {
		// bbolt writes its meta pages as it creates a file: an empty one was
		// never initialized and holds no session.
		if after != nil {
			after()
		}
		return 0, nil
	}
	// The file's pages are read through bbolt's memory map: a page that is not
	// there (a file cut short, a bad block) must fail this call, not fault the
	// process. Every read of the file happens on this goroutine.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guard(path, &err)

	src, err := openBoltReadOnly(path)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	// bbolt trusts the file's page tree: a page that points back at an
	// ancestor makes a cursor loop until memory runs out. The tree is walked
	// first, outside the memory map, while the lock keeps writers out.
	if err := verifyTree(path); err != nil {
		return 0, &CorruptError{Path: path, Cause: err.Error()}
	}

	have, err := b.sessionIDs()
	if err != nil {
		return 0, err
	}
	limit := 4*fi.Size() + 1<<20 // no valid file yields more bytes than this
	var read int64
	err = src.View(func(tx *bolt.Tx) error {
		var batch []sessionCopy
		var size int64
		add := func(s sessionCopy) error {
			read += s.size
			if read > limit {
				return &CorruptError{Path: path, Cause: fmt.Sprintf("its records add up to more than %d bytes in a file of %d", limit, fi.Size())}
			}
			batch = append(batch, s)
			if size += s.size; size >= importBatchBytes {
				k, err := b.writeImported(batch)
				n += k
				batch, size = nil, 0
				return err
			}
			return nil
		}
		if err := readLegacySessions(ctx, tx, have, limit-read, add, b.warn); err != nil {
			return err
		}
		if err := readSessions(ctx, tx, have, limit, &read, add); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		k, err := b.writeImported(batch)
		n += k
		return err
	})
	if err != nil {
		return n, err
	}
	if after != nil {
		after()
	}
	return n, nil
}

// openBoltReadOnly is openBolt for a file that is only read: it is never
// created or initialized, and its lock is shared.
func openBoltReadOnly(path string) (db *bolt.DB, err error) {
	defer func() {
		if v := recover(); v != nil {
			db, err = nil, &CorruptError{Path: path, Cause: fmt.Sprint(v)}
			runtime.GC() // let the abandoned file's finalizer close it
		}
	}()
	if err := checkMeta(path); err != nil {
		return nil, &CorruptError{Path: path, Cause: err.Error()}
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: LockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w (waited %s)", ErrLocked, LockTimeout)
	}
	for _, corrupt := range []error{berrors.ErrInvalid, berrors.ErrVersionMismatch, berrors.ErrChecksum, berrors.ErrInvalidMapping} {
		if errors.Is(err, corrupt) {
			return nil, &CorruptError{Path: path, Cause: err.Error()}
		}
	}
	return db, err
}

// readLegacySessions reads the sessions of a file of the legacy layout
// (formats 1 and 2) that have an index record and are not in have, and
// passes each to add, converted to the current layout (what cannot be
// converted is described to skip).
func readLegacySessions(ctx context.Context, tx *bolt.Tx, have map[string]bool, budget int64, add func(sessionCopy) error, skip func(string)) error {
	index := tx.Bucket(legacySessions)
	if index == nil {
		return nil // a store of the current layout, or one never used
	}
	threads := tx.Bucket(legacyThreads)
	var read int64
	c := index.Cursor()
	for id, rec := c.First(); id != nil; id, rec = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rec == nil || have[string(id)] {
			continue // a nested bucket is no session record; b's own version is kept
		}
		s := sessionCopy{id: bytes.Clone(id)}
		s.size = int64(len(id) + len(rec))
		var thread *bucketCopy
		if threads != nil {
			if t := threads.Bucket(id); t != nil {
				tree, err := copyBucket(t, &s.size, budget-read)
				if err != nil {
					return fmt.Errorf("session %q: %w", id, err)
				}
				thread = tree
			}
		}
		s.buckets = convertLegacy(s.id, bytes.Clone(rec), thread, skip)
		read += s.size
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// readSessions reads the sessions of a file of the current layout that
// have a session record and are not in have, every namespace of each, and
// passes each to add; *read counts the bytes read, which must stay within
// limit.
func readSessions(ctx context.Context, tx *bolt.Tx, have map[string]bool, limit int64, read *int64, add func(sessionCopy) error) error {
	var ids []string
	forEachThread(tx, func(id string, root *bolt.Bucket) error {
		if root != nil && sessionOf(root.Get(keyHead)) != nil && !have[id] {
			ids = append(ids, id)
		}
		return nil
	})
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := sessionCopy{id: []byte(id)}
		prefix := threadBucketPrefix(id)
		c := tx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if t, _, ok := parseThreadBucket(k); !ok || t != id {
				continue
			}
			tree, err := copyBucket(tx.Bucket(k), &s.size, limit-*read)
			if err != nil {
				return fmt.Errorf("session %q: %w", id, err)
			}
			fb := flatBucket{name: bytes.Clone(k), seq: tree.seq}
			for _, e := range tree.entries {
				if e.bucket == nil {
					fb.entries = append(fb.entries, flatEntry{e.key, e.value})
				}
			}
			s.buckets = append(s.buckets, fb)
		}
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
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

// sessionCopy is one session read from another store file, in the current
// layout: the buckets of its namespaces.
type sessionCopy struct {
	id      []byte
	buckets []flatBucket
	size    int64
}

// bucketCopy is a bucket read into memory: its sequence and its entries in
// key order, each a value or a nested bucket.
type bucketCopy struct {
	seq     uint64
	entries []entryCopy
}

type entryCopy struct {
	key, value []byte
	bucket     *bucketCopy // set for a nested bucket; value is then nil
}

// copyBucket reads bkt and its nested buckets into memory, adding the bytes
// read to *size; more than budget bytes means the file is damaged.
func copyBucket(bkt *bolt.Bucket, size *int64, budget int64) (*bucketCopy, error) {
	out := &bucketCopy{seq: bkt.Sequence()}
	c := bkt.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		*size += int64(len(k) + len(v))
		if *size > budget {
			return nil, fmt.Errorf("its records are larger than the file")
		}
		e := entryCopy{key: bytes.Clone(k)}
		if v == nil {
			if nested := bkt.Bucket(k); nested != nil {
				sub, err := copyBucket(nested, size, budget)
				if err != nil {
					return nil, err
				}
				e.bucket = sub
			} else {
				e.value = []byte{} // an empty value
			}
		} else {
			e.value = bytes.Clone(v)
		}
		out.entries = append(out.entries, e)
	}
	return out, nil
}

// writeImported writes the sessions of batch that b does not have, in one
// durable transaction, and returns how many it wrote.
func (b *Bolt) writeImported(batch []sessionCopy) (int, error) {
	var n int
	err := b.submit(func(tx *bolt.Tx) error {
		n = 0 // the committer may run this twice: alone after a failed group
		for _, s := range batch {
			prefix := threadBucketPrefix(string(s.id))
			if k, _ := tx.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
				if t, _, ok := parseThreadBucket(k); ok && t == string(s.id) {
					continue // written since the IDs were listed: b's version is kept
				}
			}
			for _, fb := range s.buckets {
				if err := pasteFlat(tx, fb); err != nil {
					return fmt.Errorf("session %q: %w", s.id, err)
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
//     process, damaged, unreadable) is left in place, untouched, and named in
//     a note saying why; the next call tries it again.
//   - A sibling imported in full is renamed to <name>.imported (or
//     <name>.imported.2, ... if that exists), while still share-locked, so
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

// bbolt's page layout (version 2), mirrored from go.etcd.io/bbolt/internal/common
// like the meta constants of meta.go.
const (
	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltBucketLeaf   = 0x01 // a leaf element that is a nested bucket
	boltElemSize     = 16   // a branch or leaf page element
	boltBucketHeader = 16   // a bucket value: root page id, sequence; an inline page follows when root is 0
)

// verifyTree walks every page the newest meta page of the bbolt file at path
// reaches, reading the file (never through a memory map), and reports the
// first damage that would make bbolt fault, panic or loop: a page out of the
// file or reached twice (a cycle), a page that is neither branch nor leaf, an
// element, key or value past its page, a bucket value too short. It cannot
// see damage inside keys and values: bbolt keeps no checksums of them.
func verifyTree(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := newestMeta(f)
	if err != nil {
		return err
	}
	pageSize := uint64(m.pageSize)
	limit := min(m.pgid, uint64(fi.Size())/pageSize)
	seen := make([]bool, limit)
	le := binary.LittleEndian
	type todo struct {
		pgid   uint64
		inline []byte // an inline bucket's page, when set
	}
	work := []todo{{pgid: m.root}}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		p, where := t.inline, "an inline bucket"
		if p == nil {
			where = fmt.Sprintf("page %d", t.pgid)
			if t.pgid < 2 || t.pgid >= limit {
				return fmt.Errorf("a branch or bucket points to page %d, out of the file's %d", t.pgid, limit)
			}
			if seen[t.pgid] {
				return fmt.Errorf("page %d is reached twice", t.pgid)
			}
			hdr := make([]byte, boltPageHeader)
			if _, err := f.ReadAt(hdr, int64(t.pgid*pageSize)); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			if id := le.Uint64(hdr); id != t.pgid {
				return fmt.Errorf("page %d calls itself page %d", t.pgid, id)
			}
			overflow := uint64(le.Uint32(hdr[12:]))
			if overflow >= limit-t.pgid {
				return fmt.Errorf("page %d runs %d pages past the file's end", t.pgid, overflow)
			}
			for i := t.pgid; i <= t.pgid+overflow; i++ {
				if seen[i] {
					return fmt.Errorf("page %d is reached twice", i)
				}
				seen[i] = true
			}
			p = make([]byte, (1+overflow)*pageSize)
			if _, err := f.ReadAt(p, int64(t.pgid*pageSize)); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
		if len(p) < boltPageHeader {
			return fmt.Errorf("%s is cut short", where)
		}
		flags, count := le.Uint16(p[8:]), uint64(le.Uint16(p[10:]))
		size := uint64(len(p))
		switch {
		case t.inline != nil && flags != boltLeafPage:
			return fmt.Errorf("an inline bucket's page is not a leaf (flags %#x)", flags)
		case flags == boltBranchPage && count == 0:
			return fmt.Errorf("%s is a branch with no element", where)
		case flags != boltLeafPage && flags != boltBranchPage:
			return fmt.Errorf("%s is neither a branch nor a leaf (flags %#x)", where, flags)
		}
		if boltPageHeader+count*boltElemSize > size {
			return fmt.Errorf("%s: %d elements do not fit in it", where, count)
		}
		for i := uint64(0); i < count; i++ {
			off := boltPageHeader + i*boltElemSize
			e := p[off : off+boltElemSize]
			switch flags {
			case boltBranchPage:
				pos, ksize := uint64(le.Uint32(e[0:])), uint64(le.Uint32(e[4:]))
				if off+pos+ksize > size {
					return fmt.Errorf("%s: element %d's key is past the page", where, i)
				}
				work = append(work, todo{pgid: le.Uint64(e[8:])})
			case boltLeafPage:
				eflags, pos := le.Uint32(e[0:]), uint64(le.Uint32(e[4:]))
				ksize, vsize := uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
				if off+pos+ksize+vsize > size {
					return fmt.Errorf("%s: element %d's key or value is past the page", where, i)
				}
				if eflags&boltBucketLeaf == 0 {
					continue
				}
				v := p[off+pos+ksize : off+pos+ksize+vsize]
				if len(v) < boltBucketHeader {
					return fmt.Errorf("%s: element %d is a bucket of %d bytes", where, i, len(v))
				}
				if root := le.Uint64(v); root != 0 {
					work = append(work, todo{pgid: root})
				} else {
					work = append(work, todo{inline: v[boltBucketHeader:]})
				}
			}
		}
	}
	return nil
}
