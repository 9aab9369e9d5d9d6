package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Decision is a path of a project decided as the kernel will resolve it
// when the file is written: where it is, and why a change of it needs the
// user's confirmation. Decide makes it; every change of a file (a create, an
// edit, in any mode) and the command-file check use it, so no name of a
// file (a symlinked folder, a link, a second hard link) reaches a protected
// file unasked.
type Decision struct {
	Abs     string // the path absolute and clean, inside the root: what tools and editors are given
	Real    string // Abs as the kernel resolves it, inside the real root
	Rel     string // Abs relative to the root, with slashes
	RealRel string // Real relative to the real root, with slashes
	Exists  bool   // something is at Real
	// Links counts the hard links of the regular file at Real (0 when
	// there is none): past 1 the file has other names, which may be
	// protected, and no name of it can be trusted.
	Links int
	// Protected are the path's names ProtectedPaths match: Rel, and
	// RealRel when a symlink makes it another name.
	Protected []Protection
}

// Protection is a name of a path and the ProtectedPaths rule that matches it.
type Protection struct {
	Name string
	Rule Rule
}

// Decide decides path (relative to the root, or absolute inside it) as the
// kernel will resolve it: it is refused when it leaves the root, when a
// component cannot be resolved or a symlink on it points at nothing
// (Resolve); the protected rules are matched against both the path as given
// and the path its links lead to; and an existing file's hard links are
// counted.
func (p *Project) Decide(path string) (Decision, error) {
	abs, real, err := p.resolve(path)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Abs: abs, Real: real, Rel: p.slashRel(abs), RealRel: "."}
	if rel, ok := below(p.realRoot, real); ok {
		d.RealRel = filepath.ToSlash(rel)
	}
	switch fi, err := os.Lstat(real); {
	case err == nil:
		d.Exists = true
		if fi.Mode().IsRegular() {
			d.Links = linkCount(real, fi)
		}
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return Decision{}, &BoundaryError{Project: p.Name(), Path: path, Reason: "cannot resolve it: " + cleanPathErr(err, p.root)}
	}
	for i, name := range []string{d.Rel, d.RealRel} {
		if i == 1 && strings.EqualFold(name, d.Rel) {
			break
		}
		if r, ok := Match(ProtectedPaths, name); ok {
			d.Protected = append(d.Protected, Protection{Name: name, Rule: r})
		}
	}
	return d, nil
}

// slashRel is abs (inside the root, either spelling) relative to the root,
// with slashes; "." for the root.
func (p *Project) slashRel(abs string) string {
	rel, err := p.rootRel(abs)
	if err != nil || rel == "" {
		return "."
	}
	return filepath.ToSlash(rel)
}

// Match returns the first rule of table that matches the path by either of
// its names: as given, or as its symlinks resolve it.
func (d Decision) Match(table []Rule) (Rule, bool) {
	if r, ok := Match(table, d.Rel); ok {
		return r, true
	}
	if d.RealRel != d.Rel {
		return Match(table, d.RealRel)
	}
	return Rule{}, false
}

// Review says why a change of the path needs the user's confirmation, ""
// when it needs none: each protected name allow does not match, and hard
// links, which allow never lifts (the file's other names are unknown, and
// may be protected).
func (d Decision) Review(allow []Rule) string {
	var why []string
	for _, pr := range d.Protected {
		if _, ok := Match(allow, pr.Name); ok {
			continue
		}
		if pr.Name == d.Rel {
			why = append(why, "protected file: "+pr.Rule.Why)
		} else {
			why = append(why, fmt.Sprintf("protected file: %s is %s through a symlink: %s", d.Rel, pr.Name, pr.Rule.Why))
		}
	}
	if d.Links > 1 {
		why = append(why, fmt.Sprintf("%s has %d hard links: the same file has other names, which may be protected files, so an edit of it always needs confirmation", d.Rel, d.Links))
	}
	return strings.Join(why, "; ")
}

// Decide is Project.Decide for an absolute path, in the project it is in.
func (w *Workspace) Decide(abs string) (*Project, Decision, error) {
	p, ok := w.ProjectFor(abs)
	if !ok {
		return nil, Decision{}, fmt.Errorf("%s is outside every project", abs)
	}
	d, err := p.Decide(abs)
	return p, d, err
}
