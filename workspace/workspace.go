// Package workspace holds the business state an agent reads: the projects of
// an editor window, their borders, what the editor has open, and how each
// project's builds and tests went. It imports neither agent nor server.
package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
)

// Project is one workspace folder.
type Project struct {
	root     string      // clean absolute path as the editor gave it
	realRoot string      // root with symlinks resolved
	rootDir  os.FileInfo // the root folder as os.Stat saw it when added: Resolve's fast path checks it is still the one
	held     heldRoot    // the root folder held open for reads and writes inside it

	mu      sync.Mutex
	name    string
	info    Info
	ctx     runtimeContext
	version uint64
	snap    *Snapshot
}

// Name returns the project's unique name.
func (p *Project) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// Root returns the project's root folder.
func (p *Project) Root() string { return p.root }

// Info returns what detection found.
func (p *Project) Info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// update changes the runtime context under the lock and bumps the version.
func (p *Project) update(f func(c *runtimeContext)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.ctx)
	p.version++
}

// Refresh re-reads the manifests and git HEAD: a handful of small file reads.
func (p *Project) Refresh() {
	info := Detect(p.root)
	p.mu.Lock()
	defer p.mu.Unlock()
	if info.GitBranch != p.info.GitBranch || info.Type != p.info.Type || fmt.Sprint(info.TechStack) != fmt.Sprint(p.info.TechStack) {
		p.info = info
		p.version++
	}
}

// Workspace is the registry of projects and the editor's open buffers.
type Workspace struct {
	mu       sync.RWMutex // guards projects, docs, edited, expecting, unseen and changed
	projects []*Project   // in the order they were added
	docs     map[string]*Document
	enc      Encoding
	// edited records, per document, the sessions whose agent edited it.
	edited map[string]map[string]bool
	// expecting holds the files the agent asked the editor to change that
	// the editor has not shown the server yet (ExpectOpen).
	expecting map[string]bool
	// unseen holds the edits the editor applied without showing the server
	// their result yet (EditUnseen): Saved compares the disk with it.
	unseen map[string]unseenEdit
	// changed is closed, and replaced, whenever a document opens, changes,
	// is saved or closes: waiters for a document's next version select on it.
	changed chan struct{}
	locks   editLocks
}

// New returns an empty workspace whose buffers use the given position encoding.
func New(enc Encoding) *Workspace {
	if enc == "" {
		enc = UTF16
	}
	return &Workspace{docs: map[string]*Document{}, enc: enc, edited: map[string]map[string]bool{}, changed: make(chan struct{})}
}

// Encoding returns the position encoding of the buffers.
func (w *Workspace) Encoding() Encoding { return w.enc }

// Add registers the folder root as a project. A name already taken gets a
// suffix ("web-2"). It detects the project's type, stack and branch.
func (w *Workspace) Add(name, root string) (*Project, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("add project %s: %w", name, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("add project %s: %w", name, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("add project %s: %s is not a folder", name, abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("add project %s: %w", name, err)
	}
	if name == "" {
		name = filepath.Base(abs)
	}
	p := &Project{root: abs, realRoot: real, rootDir: fi, info: Detect(abs), ctx: newRuntimeContext()}
	w.mu.Lock()
	defer w.mu.Unlock()
	p.name = w.uniqueLocked(name, nil)
	for path := range w.docs {
		if within(abs, path) {
			p.ctx.open[path] = true
		}
	}
	w.projects = append(w.projects, p)
	return p, nil
}

func (w *Workspace) uniqueLocked(name string, self *Project) string {
	taken := func(n string) bool {
		for _, p := range w.projects {
			if p != self && p.Name() == n {
				return true
			}
		}
		return false
	}
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if n := name + "-" + strconv.Itoa(i); !taken(n) {
			return n
		}
	}
}

// Remove unregisters a project by name and reports whether it existed. Its
// root folder is no longer held open once the accesses under way end.
func (w *Workspace) Remove(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range w.projects {
		if p.Name() == name {
			w.projects = append(w.projects[:i:i], w.projects[i+1:]...)
			p.held.drop()
			return true
		}
	}
	return false
}

// RemoveRoot unregisters the project with the given root folder, as Remove.
func (w *Workspace) RemoveRoot(root string) bool {
	abs, _ := filepath.Abs(root)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range w.projects {
		if p.root == abs {
			w.projects = append(w.projects[:i:i], w.projects[i+1:]...)
			p.held.drop()
			return true
		}
	}
	return false
}

// Rename gives a project a new name (made unique) and returns it.
func (w *Workspace) Rename(old, name string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.projects {
		if p.Name() == old {
			n := w.uniqueLocked(name, p)
			p.mu.Lock()
			p.name = n
			p.version++
			p.mu.Unlock()
			return n, nil
		}
	}
	return "", fmt.Errorf("rename project: unknown project %q", old)
}

// Project returns the project with the given name.
func (w *Workspace) Project(name string) (*Project, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, p := range w.projects {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// ProjectAt returns the project whose root folder is root (as given or
// with its links resolved).
func (w *Workspace) ProjectAt(root string) (*Project, bool) {
	root = filepath.Clean(root)
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, p := range w.projects {
		if p.root == root || p.realRoot == root {
			return p, true
		}
	}
	return nil, false
}

// ProjectFor returns the project holding path; with nested folders the
// longest root wins.
func (w *Workspace) ProjectFor(path string) (*Project, bool) {
	path = filepath.Clean(path)
	w.mu.RLock()
	defer w.mu.RUnlock()
	var best *Project
	for _, p := range w.projects {
		if (within(p.root, path) || within(p.realRoot, path)) && (best == nil || len(p.root) > len(best.root)) {
			best = p
		}
	}
	return best, best != nil
}

// Projects returns every project in the order they were added.
func (w *Workspace) Projects() []*Project {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return append([]*Project(nil), w.projects...)
}

// Roots returns the projects' root folders, in the order they were added.
func (w *Workspace) Roots() []string {
	var out []string
	for _, p := range w.Projects() {
		out = append(out, p.Root())
	}
	return out
}

// Names returns the projects' names, sorted.
func (w *Workspace) Names() []string {
	var out []string
	for _, p := range w.Projects() {
		out = append(out, p.Name())
	}
	sort.Strings(out)
	return out
}
