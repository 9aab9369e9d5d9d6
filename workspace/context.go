package workspace

import (
	"sort"
	"time"
)

// Status is the outcome of a project's last build or test.
type Status string

// Build and test statuses.
const (
	StatusUnknown Status = "unknown"
	StatusPending Status = "pending"
	StatusSuccess Status = "success"
	StatusFailed  Status = "failed"
)

// Outcome is one build or test result.
type Outcome struct {
	Status  Status    `json:"status"`
	Command string    `json:"command,omitempty"`
	Summary string    `json:"summary,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// MaxRecentErrors bounds a project's recent error list.
const MaxRecentErrors = 20

// Context is a project's runtime context, as a snapshot sees it.
type Context struct {
	OpenFiles      []string `json:"openFiles"`
	PendingChanges []string `json:"pendingChanges"`
	LastBuild      Outcome  `json:"lastBuild"`
	LastTest       Outcome  `json:"lastTest"`
	RecentErrors   []string `json:"recentErrors"`
}

// runtimeContext is the mutable state behind Context; guarded by Project.mu.
type runtimeContext struct {
	open    map[string]bool
	pending map[string]int
	build   Outcome
	test    Outcome
	errors  []string // newest first
}

func newRuntimeContext() runtimeContext {
	return runtimeContext{open: map[string]bool{}, pending: map[string]int{},
		build: Outcome{Status: StatusUnknown}, test: Outcome{Status: StatusUnknown}}
}

func (c *runtimeContext) view(p *Project) Context {
	out := Context{LastBuild: c.build, LastTest: c.test,
		OpenFiles: make([]string, 0, len(c.open)), PendingChanges: make([]string, 0, len(c.pending)),
		RecentErrors: append([]string{}, c.errors...)}
	for f := range c.open {
		out.OpenFiles = append(out.OpenFiles, p.Rel(f))
	}
	for f := range c.pending {
		out.PendingChanges = append(out.PendingChanges, p.Rel(f))
	}
	sort.Strings(out.OpenFiles)
	sort.Strings(out.PendingChanges)
	return out
}

// SetBuild records the outcome of a build.
func (p *Project) SetBuild(o Outcome) {
	p.update(func(c *runtimeContext) { c.build = stamp(o) })
}

// SetTest records the outcome of a test run.
func (p *Project) SetTest(o Outcome) {
	p.update(func(c *runtimeContext) { c.test = stamp(o) })
}

func stamp(o Outcome) Outcome {
	if o.At.IsZero() {
		o.At = time.Now()
	}
	return o
}

// AddError records a recent error; the list keeps the newest MaxRecentErrors.
func (p *Project) AddError(msg string) {
	p.update(func(c *runtimeContext) {
		c.errors = append([]string{msg}, c.errors...)
		if len(c.errors) > MaxRecentErrors {
			c.errors = c.errors[:MaxRecentErrors]
		}
	})
}

// BeginChange marks path as having an edit in flight; EndChange clears it.
func (p *Project) BeginChange(path string) {
	p.update(func(c *runtimeContext) { c.pending[path]++ })
}

// EndChange clears one in-flight edit of path.
func (p *Project) EndChange(path string) {
	p.update(func(c *runtimeContext) {
		if c.pending[path]--; c.pending[path] <= 0 {
			delete(c.pending, path)
		}
	})
}

func (p *Project) setOpen(path string, open bool) {
	p.update(func(c *runtimeContext) {
		if open {
			c.open[path] = true
		} else {
			delete(c.open, path)
		}
	})
}

// Snapshot is a read-only view of a project for prompts and listings. Version
// changes whenever anything in it does, so callers can cache on it.
type Snapshot struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version uint64 `json:"-"`
	Info
	Context Context `json:"context"`
}

// Snapshot returns the project's current snapshot without touching the disk.
func (p *Project) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap != nil && p.snap.Version == p.version {
		return *p.snap
	}
	s := Snapshot{Name: p.name, Path: p.root, Version: p.version, Info: p.info, Context: p.ctx.view(p)}
	p.snap = &s
	return s
}
