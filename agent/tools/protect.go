package tools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// outcomeNote tells the model what the sandbox did after a command: what it
// undid (or will undo when the commands running now in the project end),
// the repositories the command created, and what it could not watch.
func outcomeNote(o sandbox.Outcome) string {
	var b strings.Builder
	if len(o.Undone) > 0 {
		fmt.Fprintf(&b, "\n[the sandbox undid changes to protected files, which commands may not change: %s]", strings.Join(o.Undone, ", "))
	}
	if len(o.Pending) > 0 {
		fmt.Fprintf(&b, "\n[commands may not change protected files: these changes are undone when the commands running now in this project end: %s]", strings.Join(o.Pending, ", "))
	}
	if len(o.NewRepos) > 0 {
		fmt.Fprintf(&b, "\n[the command created a repository: %s. What in it would make git run a program was set aside (the user can move it back after reviewing it); from the next command on its git metadata is read-only to commands, as every .git is]", strings.Join(o.NewRepos, ", "))
	}
	if len(o.Unwatched) > 0 {
		fmt.Fprintf(&b, "\n[protected files too big or too many to watch: %s]", strings.Join(o.Unwatched, ", "))
	}
	return b.String()
}

// refusedMarks are what a failed write into a read-only mount prints:
// EROFS, and EBUSY for renaming or removing a mount point.
var refusedMarks = []string{"Read-only file system", "Device or resource busy"}

// refusedPaths finds in a command's output the paths it was refused for
// being read-only (ro: the .git and protected paths of the project,
// relative to root), relative and deduplicated.
func refusedPaths(out, root string, ro []string) []string {
	var found []string
	for _, line := range strings.Split(out, "\n") {
		if !slices.ContainsFunc(refusedMarks, func(m string) bool { return strings.Contains(line, m) }) {
			continue
		}
		for _, w := range strings.Fields(line) {
			w = strings.Trim(w, "'\"`‘’“”:,;()")
			if !strings.ContainsRune(w, '/') && !slices.Contains(ro, w) {
				continue
			}
			rel := w
			if filepath.IsAbs(w) {
				r, err := filepath.Rel(root, w)
				if err != nil || strings.HasPrefix(r, "..") {
					continue
				}
				rel = filepath.ToSlash(r)
			}
			rel = filepath.ToSlash(filepath.Clean(rel))
			for _, p := range ro {
				if (rel == p || strings.HasPrefix(rel, p+"/")) && !slices.Contains(found, rel) {
					found = append(found, rel)
				}
			}
		}
	}
	return found
}

// readOnlyNote tells the model which read-only paths refused the command
// and what the user can do: run it themselves, or let commands write there.
func readOnlyNote(refused []string, root string) string {
	git := filepath.Join(root, ".git")
	for _, r := range refused { // the repository of the first git path
		if i := strings.Index("/"+r+"/", "/.git/"); i >= 0 {
			git = filepath.Join(root, filepath.FromSlash(r[:i]), ".git")
			break
		}
	}
	return fmt.Sprintf("\n[blocked by the sandbox: git metadata and protected paths are read-only to commands, so writing %s was refused. "+
		"Do not retry it in the sandbox: ask the user to run it (a git add, commit or config runs in their terminal), "+
		"or to let this project's commands write there by adding the directory to the sandbox.writable setting (for git: --sandbox-write %s), or to turn the sandbox off.]",
		strings.Join(refused, ", "), git)
}
