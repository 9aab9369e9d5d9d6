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
// each time. It is closed once the folder is no longer the one the path
// names, or the project is removed, as soon as no access uses it.
type heldRoot struct {
	mu      sync.Mutex // guards the fields below
	r       *os.Root   // the folder the project was added with; nil until first used, and after drop
	users   int        // accesses using r now
	dropped bool       // never held again: the project was removed or its folder replaced
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
				return r, p.held.put, nil
			}
		} else {
			p.held.drop() // the folder moved or went: do not keep it open
		}
	}
	r, err := os.OpenRoot(p.realRoot)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close() }, nil
}

// get returns the held folder for one access (put ends it), opening it at
// path first if it is not held yet; nil when it is not to be held, or path
// does not open the folder dir (it changed meanwhile).
func (h *heldRoot) get(path string, dir os.FileInfo) *os.Root {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped {
		return nil
	}
	if h.r == nil {
		r, err := os.OpenRoot(path)
		if err != nil {
			return nil
		}
		if fi, err := r.Stat("."); err != nil || !os.SameFile(fi, dir) {
			r.Close()
			return nil
		}
		h.r = r
	}
	h.users++
	return h.r
}

// put ends an access get began.
func (h *heldRoot) put() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.users--
	h.closeIdle()
}

// drop stops holding the folder: it is closed once no access uses it.
func (h *heldRoot) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropped = true
	h.closeIdle()
}

// closeIdle closes a dropped folder no access uses; h.mu is held.
func (h *heldRoot) closeIdle() {
	if h.dropped && h.users == 0 && h.r != nil {
		h.r.Close()
		h.r = nil
	}
}
