// Package boltfile reads bbolt files without bbolt: page by page,
// checking every page before it is trusted (bbolt trusts the file, and its
// reads of a damaged one fault, panic or loop). The store uses it where bbolt cannot be trusted with a file: to
// check a file before bbolt maps it (a damaged page tree makes bbolt fault,
// panic or loop), and to read what a damaged file still holds.
//
// It mirrors bbolt's file format (version 2) as go.etcd.io/bbolt v1.5.0
// writes it (go.etcd.io/bbolt/internal/common, which cannot be imported);
// TestMirror builds files with the pinned bbolt and checks this mirror
// against them, so an upgrade that moves the layout fails loudly. Integers
// are little-endian, as bbolt writes them on the machines we build for.
package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt's file format (version 2). Each of the first two pages holds a
// meta record after the page header; a page is a header and its elements;
// a bucket's value is its header and, for an inline bucket, its page.
const (
	Magic       = 0xED0CDAED
	Version     = 2
	PageHeader  = 16 // id u64, flags u16, count u16, overflow u32
	ElementSize = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	BucketSize  = 16 // root u64, sequence u64; an inline bucket's page follows when root is 0
	// metaSum is how many bytes of the meta record its checksum (FNV-1a,
	// 64 bits, right after them) covers.
	metaSum = 56

	BranchPage   = 0x01
	LeafPage     = 0x02
	MetaPage     = 0x04
	FreelistPage = 0x10
	BucketLeaf   = 0x01 // a leaf element that is a nested bucket

	// NoFreelist is the freelist page id of a file written without one.
	NoFreelist = ^uint64(0)
	// bigFreelist in a freelist page's count says that the count is the
	// first id's slot.
	bigFreelist = 0xFFFF
)

var le = binary.LittleEndian

// Meta is a bbolt meta record: the root bucket and the page counts of one
// commit.
type Meta struct {
	PageSize uint32
	Root     uint64 // the root bucket's root page
	RootSeq  uint64
	Freelist uint64 // the freelist's page, NoFreelist when the file keeps none
	Pgid     uint64 // the high-water mark: pages [0, Pgid) are in the file
	Txid     uint64
}

// ErrNoMeta is wrapped by the error of a file with no valid meta page: bbolt
// cannot open it, and nothing in it can be found.
var ErrNoMeta = errors.New("no valid meta page")

// ReadMeta reads the meta record bbolt would use, the valid one of the
// two meta pages with the higher transaction id; other is the damage of the
// other meta page (nil when it is valid).
func ReadMeta(r io.ReaderAt) (m Meta, other error, err error) {
	m0, err0 := readMeta(r, 0, 0)
	size := uint32(4096)
	if err0 == nil {
		size = m0.PageSize
	}
	m1, err1 := readMeta(r, int64(size), 1)
	switch {
	case err0 != nil && err1 != nil:
		return Meta{}, nil, fmt.Errorf("%w (%v)", ErrNoMeta, err0)
	case err0 != nil:
		return m1, err0, nil
	case err1 != nil:
		return m0, err1, nil
	case m0.Txid >= m1.Txid:
		return m0, nil, nil
	}
	return m1, nil, nil
}

// readMeta reads and validates the meta record of page id at off.
func readMeta(r io.ReaderAt, off int64, id uint64) (Meta, error) {
	buf := make([]byte, PageHeader+metaSum+8)
	if n, err := r.ReadAt(buf, off); n < len(buf) {
		return Meta{}, fmt.Errorf("meta page %d is cut short (%v)", id, err)
	}
	b := buf[PageHeader:]
	if le.Uint32(b[0:]) != Magic {
		return Meta{}, fmt.Errorf("meta page %d: not a bbolt file", id)
	}
	if v := le.Uint32(b[4:]); v != Version {
		return Meta{}, fmt.Errorf("meta page %d: bbolt format version %d, not %d", id, v, Version)
	}
	h := fnv.New64a()
	h.Write(b[:metaSum])
	if h.Sum64() != le.Uint64(b[metaSum:]) {
		return Meta{}, fmt.Errorf("meta page %d: checksum mismatch", id)
	}
	m := Meta{PageSize: le.Uint32(b[8:]), Root: le.Uint64(b[16:]), RootSeq: le.Uint64(b[24:]),
		Freelist: le.Uint64(b[32:]), Pgid: le.Uint64(b[40:]), Txid: le.Uint64(b[48:])}
	if m.PageSize < 512 || m.PageSize > 1<<20 || m.PageSize&(m.PageSize-1) != 0 {
		return Meta{}, fmt.Errorf("meta page %d: page size %d", id, m.PageSize)
	}
	return m, nil
}

// CheckSize reports a file whose meta record counts pages the file does
// not hold (cut short), or whose root or freelist lies past its pages:
// bbolt v1.5 maps such pages without checking, and reading them faults.
func CheckSize(m Meta, size int64) error {
	pages := uint64(size) / uint64(m.PageSize)
	switch {
	case m.Pgid > pages:
		return fmt.Errorf("the file holds %d pages of the %d its meta page counts (cut short)", pages, m.Pgid)
	case m.Root >= m.Pgid:
		return fmt.Errorf("the root page %d is past the file's %d pages", m.Root, m.Pgid)
	case m.Freelist != NoFreelist && m.Freelist >= m.Pgid:
		return fmt.Errorf("the freelist page %d is past the file's %d pages", m.Freelist, m.Pgid)
	}
	return nil
}

// pageHeader is the header of a page.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func parseHeader(p []byte) pageHeader {
	return pageHeader{id: le.Uint64(p), flags: le.Uint16(p[8:]), count: le.Uint16(p[10:]), overflow: le.Uint32(p[12:])}
}

// Bucket is where a bucket's tree starts: its root page, or its inline
// page (root 0), and its sequence.
type Bucket struct {
	root   uint64
	inline []byte
	Seq    uint64
}

// ParseBucket reads a bucket element's value: the bucket's header and, for
// an inline bucket, its page. The returned Bucket refers to v.
func ParseBucket(v []byte) (Bucket, error) {
	if len(v) < BucketSize {
		return Bucket{}, fmt.Errorf("a bucket value of %d bytes", len(v))
	}
	b := Bucket{root: le.Uint64(v), Seq: le.Uint64(v[8:])}
	if b.root == 0 {
		b.inline = v[BucketSize:]
		if len(b.inline) < PageHeader {
			return Bucket{}, fmt.Errorf("an inline bucket of %d bytes", len(b.inline))
		}
	}
	return b, nil
}
