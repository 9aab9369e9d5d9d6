package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// What a headless run changed on disk: each file as it was before the run
// first changed it, and at the end its unified diff and counted lines (the
// result's filesChanged and, with --diff, diff).

// fileChange is one file a run changed: its path (relative to the
// workspace folder that holds it) and its lines added and removed.
type fileChange struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
}

// fileChanges keeps the files a run is changing as they were before (not
// safe for concurrent use: client.mu guards it).
type fileChanges struct {
	before map[string]*string // absolute path -> its text before the run, nil when it did not exist
}

// remember keeps path's text, once: the first change of a file is what the
// run changed it from.
func (f *fileChanges) remember(path string) {
	if path == "" {
		return
	}
	if f.before == nil {
		f.before = map[string]*string{}
	}
	if _, ok := f.before[path]; ok {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.before[path] = nil // created by the run (or unreadable: shown as new)
		return
	}
	s := string(b)
	f.before[path] = &s
}

// diff is the run's changes: each file whose text differs from before, its
// lines counted, and the unified diff of all of them (paths relative to
// the folder of workspaces that holds them), in path order.
func (f *fileChanges) diff(workspaces []string) ([]fileChange, string) {
	paths := make([]string, 0, len(f.before))
	for p := range f.before {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	changes := []fileChange{}
	var all strings.Builder
	for _, p := range paths {
		old, now, existed := "", "", f.before[p] != nil
		if existed {
			old = *f.before[p]
		}
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		now = string(b)
		if existed && old == now || !existed && err != nil {
			continue
		}
		rel := relTo(workspaces, p)
		from, to := "a/"+rel, "b/"+rel
		if !existed {
			from = "/dev/null"
		}
		u, err := udiff.ToUnifiedDiff(from, to, old, udiff.Lines(old, now), 3)
		if err != nil {
			continue
		}
		c := fileChange{Path: rel}
		for _, h := range u.Hunks {
			for _, l := range h.Lines {
				switch l.Kind {
				case udiff.Insert:
					c.Added++
				case udiff.Delete:
					c.Removed++
				}
			}
		}
		changes = append(changes, c)
		all.WriteString(u.String())
	}
	return changes, all.String()
}

// relTo is path relative to the first of folders that holds it, else path.
func relTo(folders []string, path string) string {
	for _, w := range folders {
		if rel, err := filepath.Rel(w, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return path
}
