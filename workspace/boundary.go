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

// BoundaryError is returned when a path leaves its project.
type BoundaryError struct {
	Project string
	Path    string
	Reason  string
}

func (e *BoundaryError) Error() string {
	return fmt.Sprintf("path %q is outside project %q: %s", e.Path, e.Project, e.Reason)
}

// within reports whether path is root or below it; both must be clean.
func within(root, path string) bool {
	if path == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(path, root)
	}
	return len(path) > len(root) && path[len(root)] == filepath.Separator && strings.HasPrefix(path, root)
}

// below returns path relative to root when path is a clean path inside
// root other than root itself (what Resolve returns), without the two
// Cleans of filepath.Rel; ok is false for any other path.
func below(root, path string) (rel string, ok bool) {
	if path == root || !within(root, path) {
		return "", false
	}
	rel = strings.TrimPrefix(path[len(root):], string(filepath.Separator))
	// Clean leaves a clean relative path as it is, and also one that climbs
	// (../x), is absolute (/x: root//x) or is "." (root/.): none is below.
	up := rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	return rel, !up && !filepath.IsAbs(rel) && filepath.Clean(rel) == rel
}

// Resolve returns the absolute path of path inside the project. It takes paths
// relative to the root and absolute paths inside it, and refuses `..` escapes,
// absolute paths outside, and symlinks at any component whose target leaves the
// root. A path that does not exist yet is checked through its nearest existing
// parent.
func (p *Project) Resolve(path string) (string, error) {
	name := p.Name()
	refuse := func(reason string) (string, error) {
		return "", &BoundaryError{Project: name, Path: path, Reason: reason}
	}
	if path == "" {
		return refuse("empty path")
	}
	if strings.ContainsRune(path, 0) {
		return refuse("path contains a NUL byte")
	}
	var abs string
	if filepath.IsAbs(path) {
		abs = filepath.Clean(path)
		if !within(p.root, abs) && !within(p.realRoot, abs) {
			return refuse("absolute path outside the project root " + p.root)
		}
	} else {
		abs = filepath.Join(p.root, path)
		if !within(p.root, abs) {
			return refuse("it climbs out of the project with ..")
		}
	}
	if p.plainBelow(abs) {
		return abs, nil
	}
	// Find the nearest existing ancestor (or the path itself) and resolve its links.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return refuse(err.Error())
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return refuse("no existing parent")
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return refuse("cannot resolve symlink: " + err.Error())
	}
	if !within(p.realRoot, real) {
		return refuse("a symlink points outside the project root")
	}
	return filepath.Join(existing, rest), nil
}

// plainBelow reports whether abs, a clean path within the root (as given or
// resolved), leads to the project's own root folder and has no symlink among
// its components below it: the root path still names the folder the project
// was added with (not a link or folder put in its place since), and each
// component exists and is no link, until the first that does not exist. Then
// nothing in it can lead out of the root, and Resolve need not resolve links
// component by component from the file system's root (a system call each);
// false sends it to that full check.
func (p *Project) plainBelow(abs string) bool {
	prefix := p.root
	if !within(prefix, abs) {
		prefix = p.realRoot
		if !within(prefix, abs) {
			return false
		}
	}
	if fi, err := os.Stat(prefix); err != nil || p.rootDir == nil || !os.SameFile(fi, p.rootDir) {
		return false
	}
	rel := strings.TrimPrefix(abs[len(prefix):], string(filepath.Separator))
	cur := strings.TrimSuffix(prefix, string(filepath.Separator)) // a root of "/" leaves ""
	for rel != "" {
		name, rest, _ := strings.Cut(rel, string(filepath.Separator))
		cur += string(filepath.Separator) + name // abs is clean: name is neither "" nor "." nor ".."
		fi, err := os.Lstat(cur)
		if err != nil {
			return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return false
		}
		rel = rest
	}
	return true
}

// Rel returns path relative to the project root, with forward slashes.
func (p *Project) Rel(path string) string {
	if r, ok := below(p.root, path); ok {
		return filepath.ToSlash(r)
	}
	r, err := filepath.Rel(p.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}
