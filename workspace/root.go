package workspace

import (
	"os"
	"runtime"
	"sync"
)

// holdRoot says whether a project holds its root folder open between file
// accesses. Windows refuses to rename or delete a folder while a handle to
// it is open, so there each access opens the folder anew.
const holdRoot = runtime.GOOS != "windows"

// heldRoot is a project's root folder, opened once and kept open: a read
// or write through it costs one stat of the root's path (that it still
// names the folder) instead of opening, checking and closing the folder
// each time. The os.Root closes with the project (its finalizer).
type heldRoot struct {
	mu sync.Mutex // guards r
	r  *os.Root   // the folder the project was added with; nil until first used
}

// openRoot returns the project's root folder for access inside it, and a
// function to call when done with it. While the root's path names the folder
// the project was added with, that is the folder held open; otherwise (the
// folder was replaced or moved since) the folder the path names now, opened
// for this access alone, as Resolve then checks paths against it too.
func (p *Project) openRoot() (*os.Root, func(), error) {
	if holdRoot && p.rootDir != nil {
		if fi, err := os.Stat(p.realRoot); err == nil && os.SameFile(fi, p.rootDir) {
			if r := p.held.get(p.realRoot, p.rootDir); r != nil {
				return r, func() {}, nil
			}
		}
	}
	r, err := os.OpenRoot(p.realRoot)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close() }, nil
}

// get returns the held folder, opening it at path first if it is not held
// yet; nil when path does not open the folder dir (it changed meanwhile).
func (h *heldRoot) get(path string, dir os.FileInfo) *os.Root {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.r != nil {
		return h.r
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil
	}
	if fi, err := r.Stat("."); err != nil || !os.SameFile(fi, dir) {
		r.Close()
		return nil
	}
	h.r = r
	return r
}
