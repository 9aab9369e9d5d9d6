package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
)

// Problem is one piece of damage found in a file.
type Problem struct {
	// Where is the caller's name of the bucket whose tree holds the
	// damage (Walk's where); "" for the file as a whole.
	Where string
	Page  uint64 // the damaged page; 0 when none is
	What  string
}

func (p Problem) Error() string {
	s := p.What
	if p.Page != 0 {
		s = fmt.Sprintf("page %d: %s", p.Page, s)
	}
	if p.Where != "" {
		s = p.Where + ": " + s
	}
	return s
}

// File is a bbolt file read page by page. It is not safe for concurrent
// use, and a file another process writes while it is read may look damaged.
// Its callbacks' slices are valid only during the call, and only until the
// file is closed.
//
// Invariants: a page is read only once its id is below the pages the file
// holds and it is not an ancestor of itself on the path being walked, so a
// damaged tree never makes a walk loop or read past the file; no page is
// trusted before its header (id, kind, overflow) and its elements' layout
// (bbolt writes elements densely: each one's key and value right after the
// previous one's) are checked, so a damaged page is reported and skipped,
// never half read.
type File struct {
	r io.ReaderAt
	// mem is the file's memory map when it was opened by OpenPath: pages
	// are sliced from it, never read with a system call. unmap releases it.
	mem   []byte
	unmap func() error
	meta  Meta
	pages uint64 // pages that can be read: the meta's count, or fewer when the file is cut short
	free  []bool // pages the freelist holds; nil when it is unknown (damaged, or not kept)
	// reached marks the pages walks reached, with the freelist's own.
	reached  []bool
	visits   int // pages read by walks, bounded by maxVisits
	problems []Problem
}

// errTooMany stops every walk of a file whose pages point at each other far
// more often than a tree can.
var errTooMany = errors.New("its pages point at each other far more often than a tree's can: the walk was stopped")

// Open reads the meta pages and the freelist of the bbolt file r of size
// bytes. A file with no valid meta page is an error wrapping ErrNoMeta;
// other damage (one meta page, the freelist, a file cut short) is reported
// by Problems, and what can be read still is.
func Open(r io.ReaderAt, size int64) (*File, error) {
	m, other, err := ReadMeta(r)
	if err != nil {
		return nil, err
	}
	f := &File{r: r, meta: m, pages: min(m.Pgid, uint64(size)/uint64(m.PageSize))}
	if other != nil {
		f.problem("", 0, fmt.Sprintf("%v: the file is read as of the other meta page's commit, which may not be the newest", other))
	}
	if err := CheckSize(m, size); err != nil {
		f.problem("", 0, err.Error())
	}
	f.reached = make([]bool, f.pages)
	for i := uint64(0); i < min(2, f.pages); i++ {
		f.reached[i] = true
	}
	if m.Freelist != NoFreelist {
		if err := f.readFreelist(); err != nil {
			f.problem("", m.Freelist, "the freelist is damaged: "+err.Error())
			f.free = nil
		}
	}
	return f, nil
}

// OpenPath is Open of the file at path, read through a read-only memory
// map: its pages are sliced, not copied, and no walk makes a system call.
// Every read of the map is bounds-checked against the file's size, and a
// fault (the file cut short while it is read) becomes a Problem: Walk and
// the other methods run under the fault guard. close releases the file.
func OpenPath(path string) (f *File, close func() error, err error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close() // the map outlives the descriptor
	fi, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size <= 0 || size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%w: the file has %d bytes", ErrNoMeta, size)
	}
	mem, unmap, err := mapFile(fd, int(size))
	if err != nil {
		return nil, nil, fmt.Errorf("map the file: %w", err)
	}
	err = guard(func() error {
		var err error
		f, err = Open(bytes.NewReader(mem), size)
		return err
	})
	if err != nil {
		unmap()
		return nil, nil, err
	}
	f.mem, f.unmap = mem, unmap
	return f, unmap, nil
}

// guard runs fn with faults turned into panics, and a panic into an error:
// reading a map of a file that was cut short faults.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errFault, v)
		}
	}()
	return fn()
}

// errFault stops a walk of a file that changed (was cut short) while it was
// read.
var errFault = errors.New("the file changed while it was read")

// Meta returns the meta record the file is read as of.
func (f *File) Meta() Meta { return f.meta }

// Root returns the root bucket.
func (f *File) Root() Bucket { return Bucket{root: f.meta.Root, Seq: f.meta.RootSeq} }

// Problems returns the damage found so far.
func (f *File) Problems() []Problem { return f.problems }

func (f *File) problem(where string, page uint64, what string) {
	f.problems = append(f.problems, Problem{Where: where, Page: page, What: what})
}

// readFreelist reads the freelist page into f.free, checking that every id
// it holds is a page of the file, once, and not the freelist's own.
func (f *File) readFreelist() error {
	id := f.meta.Freelist
	p, h, err := f.readPage(id)
	if err != nil {
		return err
	}
	if h.flags != FreelistPage {
		return fmt.Errorf("it is not a freelist page (flags %#x)", h.flags)
	}
	body := p[PageHeader:]
	n := uint64(h.count)
	if h.count == bigFreelist {
		if len(body) < 8 {
			return fmt.Errorf("its count is cut off")
		}
		n, body = le.Uint64(body), body[8:]
	}
	if n > uint64(len(body))/8 {
		return fmt.Errorf("%d ids do not fit in it", n)
	}
	f.free = make([]bool, f.pages)
	for i := uint64(0); i <= uint64(h.overflow); i++ {
		f.reached[id+i] = true
	}
	for i := uint64(0); i < n; i++ {
		pg := le.Uint64(body[i*8:])
		switch {
		case pg < 2 || pg >= f.meta.Pgid:
			return fmt.Errorf("it frees page %d, out of the file's %d", pg, f.meta.Pgid)
		case pg >= f.pages:
			continue // cut off with the file's end, reported already
		case f.free[pg]:
			return fmt.Errorf("it frees page %d twice", pg)
		case f.reached[pg]:
			return fmt.Errorf("it frees its own page %d", pg)
		}
		f.free[pg] = true
	}
	return nil
}

// readPage reads page id with its overflow pages, checking that the file
// holds them all and that the page calls itself id.
func (f *File) readPage(id uint64) ([]byte, pageHeader, error) {
	ps := uint64(f.meta.PageSize)
	if id < 2 || id >= f.pages {
		if id >= 2 && id < f.meta.Pgid {
			return nil, pageHeader{}, fmt.Errorf("page %d is past the end of the file, which is cut short", id)
		}
		return nil, pageHeader{}, fmt.Errorf("page %d is out of the file's %d pages", id, f.meta.Pgid)
	}
	var hdr []byte
	if f.mem != nil {
		hdr = f.mem[id*ps : id*ps+PageHeader]
	} else {
		hdr = make([]byte, PageHeader)
		if _, err := f.r.ReadAt(hdr, int64(id*ps)); err != nil {
			return nil, pageHeader{}, fmt.Errorf("page %d cannot be read: %w", id, err)
		}
	}
	h := parseHeader(hdr)
	if h.id != id {
		return nil, h, fmt.Errorf("page %d calls itself page %d", id, h.id)
	}
	if uint64(h.overflow) >= f.pages-id {
		return nil, h, fmt.Errorf("page %d runs %d pages past the end of the file", id, h.overflow)
	}
	if f.mem != nil {
		return f.mem[id*ps : (id+1+uint64(h.overflow))*ps], h, nil
	}
	p := make([]byte, (1+uint64(h.overflow))*ps)
	if _, err := f.r.ReadAt(p, int64(id*ps)); err != nil {
		return nil, h, fmt.Errorf("page %d cannot be read: %w", id, err)
	}
	return p, h, nil
}

// maxVisits bounds the pages a file's walks read: a tree reaches each page
// once, and a few damaged links reach a few more.
func (f *File) maxVisits() int { return 2*int(f.pages) + 1024 }

// Walk calls fn with every element of bucket b's tree, in key order: its
// key, its value, and whether it is a nested bucket (whose value
// ParseBucket reads). k and v are valid only during the call. Damaged pages
// are reported as Problems under where and skipped; an element whose key is
// out of order is reported and passed on; fn's
// error stops the walk and is returned, as is the error that stops a walk
// of a file whose pages point at each other far more than a tree's do.
func (f *File) Walk(b Bucket, where string, fn func(k, v []byte, bucket bool) error) error {
	return f.walk(walk{f: f, where: where, fn: fn}, b)
}

// Reread is Walk of a bucket walked before (or to be walked after): the
// pages it reads are not marked reached, nor reported as reached twice.
func (f *File) Reread(b Bucket, where string, fn func(k, v []byte, bucket bool) error) error {
	return f.walk(walk{f: f, where: where, fn: fn, again: true}, b)
}

func (f *File) walk(w walk, b Bucket) error {
	where := w.where
	err := guard(func() error {
		if b.inline != nil {
			return w.page(0, b.inline, nil, nil)
		}
		return w.visit(b.root, nil, nil)
	})
	if errors.Is(err, errFault) {
		f.problem(where, 0, err.Error())
	}
	return err
}

// TreePages returns the pages of bucket b's own tree (not of the buckets
// nested in it), overflow pages included, in the order a walk reads them;
// nil for an inline bucket, whose page is in its parent's. Damage is
// reported as Walk reports it.
func (f *File) TreePages(b Bucket, where string) []uint64 {
	if b.inline != nil {
		return nil
	}
	w := walk{f: f, where: where, fn: func(k, v []byte, bucket bool) error { return nil }}
	w.pages = func(id uint64, overflow uint32) {
		for i := id; i <= id+uint64(overflow); i++ {
			w.seen = append(w.seen, i)
		}
	}
	if err := guard(func() error { return w.visit(b.root, nil, nil) }); err != nil {
		f.problem(where, 0, err.Error())
	}
	return w.seen
}

// walk is one Walk: its bucket's name, its callback, the pages on the path
// from the bucket's root to the page being read (a page that points back
// at one of them would loop), and the last key it passed on.
type walk struct {
	f     *File
	where string
	fn    func(k, v []byte, bucket bool) error
	path  []uint64
	last  []byte
	begun bool
	// pages, when set, is told each page read (TreePages); seen is its list.
	pages func(id uint64, overflow uint32)
	seen  []uint64
	again bool // Reread: pages are not marked reached
}

// visit reads page id, whose keys must lie in [lo, hi) (nil: unbounded).
func (w *walk) visit(id uint64, lo, hi []byte) error {
	f := w.f
	if f.visits++; f.visits > f.maxVisits() {
		return errTooMany
	}
	for _, a := range w.path {
		if a == id {
			f.problem(w.where, id, "a page points back at its ancestor: the tree has a cycle")
			return nil
		}
	}
	if f.free != nil && id < f.pages && f.free[id] {
		f.problem(w.where, id, "a branch or bucket points at a free page (an older copy, not data of the newest commit)")
		return nil
	}
	p, h, err := f.readPage(id)
	if err != nil {
		f.problem(w.where, id, err.Error())
		return nil
	}
	for i := id; i <= id+uint64(h.overflow) && !w.again; i++ {
		if f.reached[i] {
			f.problem(w.where, i, "the page is reached twice")
		}
		f.reached[i] = true
		if i > id && f.free != nil && f.free[i] {
			f.problem(w.where, i, "an overflow page is free")
		}
	}
	if w.pages != nil {
		w.pages(id, h.overflow)
	}
	w.path = append(w.path, id)
	defer func() { w.path = w.path[:len(w.path)-1] }()
	return w.page(id, p, lo, hi)
}

// element is one parsed element of a page.
type element struct {
	key, value []byte
	flags      uint32
	child      uint64
}

// page reads page p (id 0: an inline bucket's page), whose keys must lie in
// [lo, hi).
func (w *walk) page(id uint64, p []byte, lo, hi []byte) error {
	h := parseHeader(p)
	switch {
	case h.flags == LeafPage:
	case h.flags == BranchPage && id != 0 && h.count > 0:
	default:
		w.f.problem(w.where, id, fmt.Sprintf("not a branch or leaf page (flags %#x, %d elements)", h.flags, h.count))
		return nil
	}
	elems, err := parseElements(p, h)
	if err != nil {
		w.f.problem(w.where, id, err.Error())
		return nil
	}
	if h.flags == LeafPage {
		for _, e := range elems {
			// A key out of order is reported and still passed on: its
			// value may be whole, and the caller can tell (the store's
			// records are sealed with their keys).
			w.inOrder(id, e.key, lo, hi)
			if err := w.fn(e.key, e.value, e.flags&BucketLeaf != 0); err != nil {
				return err
			}
		}
		return nil
	}
	var prev []byte
	for i, e := range elems {
		if !inRange(e.key, lo, hi) || (i > 0 && bytes.Compare(e.key, prev) <= 0) {
			w.f.problem(w.where, id, fmt.Sprintf("the branch key %x is out of order", e.key))
			continue
		}
		prev = e.key
		next := hi
		if i+1 < len(elems) {
			next = elems[i+1].key
		}
		if err := w.visit(e.child, e.key, next); err != nil {
			return err
		}
	}
	return nil
}

// inRange reports whether lo <= key < hi (nil: unbounded).
func inRange(key, lo, hi []byte) bool {
	return (lo == nil || bytes.Compare(key, lo) >= 0) && (hi == nil || bytes.Compare(key, hi) < 0)
}

// inOrder reports whether the leaf key may come next in the walk: after
// the last key in order and within [lo, hi). A key out of order is
// reported.
func (w *walk) inOrder(id uint64, key, lo, hi []byte) bool {
	if !inRange(key, lo, hi) {
		w.f.problem(w.where, id, fmt.Sprintf("the key %x is out of its page's range", key))
		return false
	}
	if w.begun && bytes.Compare(key, w.last) <= 0 {
		w.f.problem(w.where, id, fmt.Sprintf("the key %x is out of order", key))
		return false
	}
	w.last = append(w.last[:0], key...)
	w.begun = true
	return true
}

// parseElements reads the elements of page p, checking that they are laid
// out as bbolt writes them: headers after the page header, then each
// element's key and value in order, right after the previous one's, all
// inside the page; keys are never empty, and a leaf element's flags are 0
// or BucketLeaf.
func parseElements(p []byte, h pageHeader) ([]element, error) {
	n := uint64(h.count)
	off := PageHeader + n*ElementSize
	if off > uint64(len(p)) {
		return nil, fmt.Errorf("%d elements do not fit in the page", n)
	}
	out := make([]element, n)
	for i := uint64(0); i < n; i++ {
		at := PageHeader + i*ElementSize
		e := p[at : at+ElementSize]
		var pos, ksize, vsize uint64
		if h.flags == BranchPage {
			pos, ksize = uint64(le.Uint32(e)), uint64(le.Uint32(e[4:]))
			out[i].child = le.Uint64(e[8:])
		} else {
			out[i].flags = le.Uint32(e)
			pos, ksize, vsize = uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
			if out[i].flags&^BucketLeaf != 0 {
				return nil, fmt.Errorf("element %d has flags %#x", i, out[i].flags)
			}
		}
		if at+pos != off {
			return nil, fmt.Errorf("element %d's key is at %d, not right after the previous element's data (%d)", i, at+pos, off)
		}
		if ksize == 0 || off+ksize+vsize > uint64(len(p)) {
			return nil, fmt.Errorf("element %d's key (%d bytes) or value (%d bytes) does not fit in the page", i, ksize, vsize)
		}
		out[i].key = p[off : off+ksize]
		out[i].value = p[off+ksize : off+ksize+vsize]
		off += ksize + vsize
	}
	return out, nil
}

// Unreached reports the pages below the high-water mark that no walk
// reached and the freelist does not hold: pages a damaged link lost. Call
// it once every bucket was walked. It says nothing when the freelist is
// unknown.
func (f *File) Unreached() []Problem {
	if f.free == nil {
		return nil
	}
	var lost []uint64
	for i := uint64(2); i < f.pages; i++ {
		if !f.reached[i] && !f.free[i] {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	what := fmt.Sprintf("%d pages are neither reached nor free (a damaged link lost them): %s", len(lost), ranges(lost))
	p := Problem{Page: lost[0], What: what}
	f.problems = append(f.problems, p)
	return []Problem{p}
}

// ranges writes sorted page ids as "3-5, 9", the first ten runs.
func ranges(ids []uint64) string {
	var b bytes.Buffer
	runs := 0
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if runs == 10 {
			b.WriteString(", ...")
			break
		}
		if runs > 0 {
			b.WriteString(", ")
		}
		if i == j {
			fmt.Fprint(&b, ids[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		}
		runs++
		i = j + 1
	}
	return b.String()
}

// Check walks every bucket of the file, nested ones included, and returns
// the damage it found (nil: none): each page reached once, in the file,
// well formed, keys in order, and every page either reached or free. It
// reads every page the tree holds.
func Check(f *File) []Problem {
	var walkBucket func(b Bucket, where string, depth int) error
	walkBucket = func(b Bucket, where string, depth int) error {
		return f.Walk(b, where, func(k, v []byte, bucket bool) error {
			if !bucket {
				return nil
			}
			sub, err := ParseBucket(v)
			name := fmt.Sprintf("%s/%q", where, k)
			if err != nil {
				f.problem(name, 0, err.Error())
				return nil
			}
			if depth >= maxDepth {
				f.problem(name, 0, "buckets nest deeper than a store's do")
				return nil
			}
			return walkBucket(sub, name, depth+1)
		})
	}
	if err := walkBucket(f.Root(), "(root)", 0); err != nil {
		f.problem("", 0, err.Error())
	}
	f.Unreached()
	return f.problems
}

// maxDepth bounds the nesting of buckets Check follows.
const maxDepth = 16
