package store

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"syscall"
)

// bbolt's file format (version 2): each of the first two pages holds a meta
// record after the 16-byte page header. These constants mirror
// go.etcd.io/bbolt/internal/common, which cannot be imported.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	boltMetaSum    = 56 // bytes of the meta record the checksum covers
	boltNoFreelist = ^uint64(0)
)

// boltMeta is the part of a bbolt meta record checkMeta reads.
type boltMeta struct {
	pageSize       uint32
	root, freelist uint64
	pgid, txid     uint64
}

// checkMeta reads the meta records of a bbolt file and reports a file bbolt
// would map past its end: bbolt v1.5 reads the freelist page without checking
// that the file holds it, and a truncated file then faults the process
// (SIGSEGV, which no recover catches). An empty or missing file is fine: bbolt
// initializes it. A file locked by another process is not checked.
func checkMeta(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// A file another process has open for writing is its to judge: its
	// lock makes bolt.Open time out, and the caller uses another file.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return nil
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil
	}
	m, err := newestMeta(f)
	if err != nil {
		return err
	}
	pages := uint64(fi.Size()) / uint64(m.pageSize)
	switch {
	case m.pgid > pages:
		return fmt.Errorf("the file holds %d pages of the %d its meta page counts (cut short)", pages, m.pgid)
	case m.root >= m.pgid:
		return fmt.Errorf("the root page %d is past the file's %d pages", m.root, m.pgid)
	case m.freelist != boltNoFreelist && m.freelist >= m.pgid:
		return fmt.Errorf("the freelist page %d is past the file's %d pages", m.freelist, m.pgid)
	}
	return nil
}

// readMeta reads and validates the meta record of the page at off.
// newestMeta is the meta record bbolt would use: the valid one of the two
// meta pages with the higher transaction id.
func newestMeta(f *os.File) (boltMeta, error) {
	head := make([]byte, boltPageHeader+boltMetaSum+8)
	m0, err0 := readMeta(f, 0, head)
	var size uint32 = 4096
	if err0 == nil {
		size = m0.pageSize
	}
	m1, err1 := readMeta(f, int64(size), head)
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, fmt.Errorf("no valid meta page (%v)", err0)
	case err0 != nil:
		return m1, nil
	case err1 != nil || m0.txid >= m1.txid:
		return m0, nil
	}
	return m1, nil
}

func readMeta(f *os.File, off int64, buf []byte) (boltMeta, error) {
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return boltMeta{}, err
	} else if err == io.EOF {
		return boltMeta{}, fmt.Errorf("meta page at %d is cut short", off)
	}
	b := buf[boltPageHeader:]
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, fmt.Errorf("meta page at %d: not a bbolt file", off)
	}
	if le.Uint32(b[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page at %d: version %d", off, le.Uint32(b[4:]))
	}
	h := fnv.New64a()
	h.Write(b[:boltMetaSum])
	if h.Sum64() != le.Uint64(b[boltMetaSum:]) {
		return boltMeta{}, fmt.Errorf("meta page at %d: checksum mismatch", off)
	}
	m := boltMeta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}
	if m.pageSize < 512 || m.pageSize > 1<<20 {
		return boltMeta{}, fmt.Errorf("meta page at %d: page size %d", off, m.pageSize)
	}
	return m, nil
}
