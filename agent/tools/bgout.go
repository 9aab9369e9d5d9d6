package tools

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// DefaultBackgroundOutput bounds the output a background process keeps on
// disk: the newest bytes, at most this many (two files of half each).
const DefaultBackgroundOutput = 4 << 20

// outFile is a background process's output, written as it comes to a file
// (mode 0600) that rotates: when it holds half the bound, it becomes the
// previous file (NAME.1, replacing the one before) and a new one starts.
// So the newest output is always kept, and at most the bound is on disk.
// Offsets count every byte the process wrote since it started. A write
// never fails: after a file error the output is counted, not kept.
type outFile struct {
	path   string
	segMax int64 // set once by newOutFile

	mu       sync.Mutex // guards the fields below
	cur      *os.File   // nil before the first write, after close or an error
	curBase  int64      // offset of cur's first byte
	prevBase int64      // offset of NAME.1's first byte; -1: there is none
	total    int64      // bytes written
	broken   bool       // a file error: nothing more is kept
}

func newOutFile(path string, limit int64) *outFile {
	return &outFile{path: path, segMax: max(limit/2, 1), prevBase: -1}
}

// Write implements io.Writer.
func (o *outFile) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n0 := len(p)
	for len(p) > 0 && !o.broken {
		if o.cur == nil || o.total-o.curBase >= o.segMax {
			if err := o.rotate(); err != nil {
				o.broken = true
				break
			}
		}
		n := min(int64(len(p)), o.segMax-(o.total-o.curBase))
		w, err := o.cur.Write(p[:n])
		o.total += int64(w)
		p = p[w:]
		if err != nil {
			o.broken = true
		}
	}
	o.total += int64(len(p)) // what could not be kept still counts
	return n0, nil
}

// rotate starts a new file, keeping the full one as the previous.
func (o *outFile) rotate() error {
	if o.cur != nil {
		o.cur.Close()
		o.cur = nil
		if err := os.Rename(o.path, o.path+".1"); err != nil {
			return err
		}
		o.prevBase = o.curBase
	}
	f, err := os.OpenFile(o.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	o.cur, o.curBase = f, o.total
	return nil
}

// Total is the number of bytes written.
func (o *outFile) Total() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// read returns at most n bytes of the output from offset since (where the
// output kept starts, when since is older: from is then past since), and
// the total written.
func (o *outFile) read(since int64, n int) (b []byte, from, total int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	oldest := o.curBase
	if o.prevBase >= 0 {
		oldest = o.prevBase
	}
	since = min(max(since, oldest), o.total)
	if o.broken {
		return nil, o.total, o.total
	}
	from = since
	for since < o.total && len(b) < n {
		path, base, end := o.path, o.curBase, o.total
		if since < o.curBase {
			path, base, end = o.path+".1", o.prevBase, o.curBase
		}
		chunk, err := readAt(path, since-base, int(min(end-since, int64(n-len(b)))))
		b = append(b, chunk...)
		since += int64(len(chunk))
		if err != nil || len(chunk) == 0 {
			break
		}
	}
	return b, from, o.total
}

func readAt(path string, off int64, n int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	return b[:k], err
}

// remove closes the output and deletes its files.
func (o *outFile) remove() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur != nil {
		o.cur.Close()
		o.cur = nil
	}
	o.broken = true
	err1 := os.Remove(o.path)
	err2 := os.Remove(o.path + ".1")
	for _, err := range []error{err1, err2} {
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove background output: %w", err)
		}
	}
	return nil
}
