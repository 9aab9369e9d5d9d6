package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds the data one transaction of a compaction copies.
const compactTxBytes = 64 << 20

// Compact rewrites the store file without its free pages (bbolt never gives
// space back to the file system) and returns its size before and after.
//
// It is safe against crashes: the data is copied into a new file next to
// the store, which is synced and renamed over it; a crash before the rename
// leaves the old file as it was (and the partial copy, which the next
// Compact replaces). Writes wait while it runs; reads and writes go on on
// the new file afterwards. It must run in the process that holds the store
// (the daemon when one runs).
func (b *Bolt) Compact(ctx context.Context) (before, after int64, err error) {
	if err := b.Flush(); err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	b.swap.Lock()
	defer b.swap.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	fi, err := os.Stat(b.path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	before = fi.Size()
	tmp := b.path + ".compacting"
	os.Remove(tmp)
	if b.readOnly {
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, ErrReadOnly)
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: LockTimeout})
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	if err := compactInto(dst, b.db, b.path); err != nil {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	if err := b.db.Close(); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	if err := os.Rename(tmp, b.path); err != nil {
		os.Remove(tmp)
		db, oerr := openBolt(b.path, false) // the old file, as it was
		if oerr != nil {
			return 0, 0, fmt.Errorf("compact %s: %w; reopening it failed: %v", b.path, err, oerr)
		}
		b.db = db
		return 0, 0, fmt.Errorf("compact %s: %w", b.path, err)
	}
	syncDir(filepath.Dir(b.path))
	db, err := openBolt(b.path, false)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: reopening the compacted file: %w", b.path, err)
	}
	b.db = db
	if fi, err := os.Stat(b.path); err == nil {
		after = fi.Size()
	}
	return before, after, nil
}

// compactInto copies src's data into dst with bbolt's compaction, under
// the fault guard. Records are copied as they are: their seals name their
// buckets and keys, which compaction keeps.
func compactInto(dst, src *bolt.DB, path string) error {
	return guarded(path, func() error { return bolt.Compact(dst, src, compactTxBytes) })
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
