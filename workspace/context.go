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
	OpenFiles      []string    `json:"openFiles"`
	PendingChanges []string    `json:"pendingChanges"`
	LastBuild      Outcome     `json:"lastBuild"`
	LastTest       Outcome     `json:"lastTest"`
	RecentErrors   []string    `json:"recentErrors"`
	Diagnostics    Diagnostics `json:"diagnostics,omitzero"`
}

// Diagnostics summarizes the latest diagnostics a language server reported
// for a project: counts, and the first few errors as path:line:col lines.
type Diagnostics struct {
	Server   string    `json:"server,omitempty"` // who reported them, e.g. "gopls"
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Files    int       `json:"files"` // files with errors or warnings
	Top      []string  `json:"top,omitempty"`
	At       time.Time `json:"at,omitzero"`
}

// MaxDiagnosticsTop bounds the error lines a diagnostics summary keeps.
const MaxDiagnosticsTop = 5

// runtimeContext is the mutable state behind Context; guarded by Project.mu.
type runtimeContext struct {
	open    map[string]bool
	pending map[string]int
	build   Outcome
	test    Outcome
	errors  []string // newest first
	diag    Diagnostics
}

func newRuntimeContext() runtimeContext {
	return runtimeContext{open: map[string]bool{}, pending: map[string]int{},
		build: Outcome{Status: StatusUnknown}, test: Outcome{Status: StatusUnknown}}
}

func (c *runtimeContext) view(p *Project) Context {
	out := Context{LastBuild: c.build, LastTest: c.test,
		OpenFiles: make([]string, 0, len(c.open)), PendingChanges: make([]string, 0, len(c.pending)),
		RecentErrors: append([]string{}, c.errors...), Diagnostics: c.diag}
	out.Diagnostics.Top = append([]string(nil), c.diag.Top...)
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

// SetDiagnostics records the latest diagnostics summary (Top is cut to
// MaxDiagnosticsTop).
func (p *Project) SetDiagnostics(d Diagnostics) {
	d.Top = append([]string(nil), d.Top[:min(len(d.Top), MaxDiagnosticsTop)]...)
	p.update(func(c *runtimeContext) { c.diag = stampDiagnostics(d) })
}

func stampDiagnostics(d Diagnostics) Diagnostics {
	if d.At.IsZero() {
		d.At = time.Now()
	}
	return d
}

// Saved is the part of a project's context a session keeps across
// restarts: build and test status, recent errors, the diagnostics summary.
type Saved struct {
	Root         string      `json:"root"`
	LastBuild    Outcome     `json:"lastBuild,omitzero"`
	LastTest     Outcome     `json:"lastTest,omitzero"`
	RecentErrors []string    `json:"recentErrors,omitempty"`
	Diagnostics  Diagnostics `json:"diagnostics,omitzero"`
}

// Saved returns what a session keeps of p's context; ok is false when there
// is nothing worth keeping (nothing ran, nothing was reported).
func (p *Project) Saved() (s Saved, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.ctx
	s = Saved{Root: p.root, LastBuild: c.build, LastTest: c.test, RecentErrors: append([]string(nil), c.errors...), Diagnostics: c.diag}
	s.Diagnostics.Top = append([]string(nil), c.diag.Top...)
	ok = c.build.Status != StatusUnknown || c.test.Status != StatusUnknown || len(c.errors) > 0 || !c.diag.At.IsZero()
	return s, ok
}

// Restore fills what p's context does not know yet from s, a session's
// saved context of the same folder: what this process learned since it
// started wins. A pending status (the process that ran it is gone) is
// restored as unknown. It reports whether anything was restored.
func (p *Project) Restore(s Saved) bool {
	restored := false
	p.update(func(c *runtimeContext) {
		outcome := func(cur *Outcome, saved Outcome) {
			if cur.Status == StatusUnknown && saved.Status != "" && saved.Status != StatusUnknown && saved.Status != StatusPending {
				*cur = saved
				restored = true
			}
		}
		outcome(&c.build, s.LastBuild)
		outcome(&c.test, s.LastTest)
		if len(c.errors) == 0 && len(s.RecentErrors) > 0 {
			c.errors = append([]string(nil), s.RecentErrors[:min(len(s.RecentErrors), MaxRecentErrors)]...)
			restored = true
		}
		if c.diag.At.IsZero() && !s.Diagnostics.At.IsZero() {
			c.diag = s.Diagnostics
			c.diag.Top = append([]string(nil), s.Diagnostics.Top[:min(len(s.Diagnostics.Top), MaxDiagnosticsTop)]...)
			restored = true
		}
	})
	return restored
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
