package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// saveForCommand saves, before a command runs in p, the documents this
// session's agent edited there that the editor holds unsaved, and returns
// the lines the command's result starts with: the edited files that are
// still unsaved (the editor cannot save, or saving failed), the user's own
// unsaved files in the project (the agent never saves those), and files that
// saving changed (a formatter on save). "" when the command sees everything.
func saveForCommand(ctx context.Context, env *Env, p *workspace.Project) string {
	edited := env.Workspace.EditedBy(env.Session, p.Root())
	failed := map[string]string{}
	var reformatted []string
	if len(edited) > 0 && env.Editor != nil {
		before := map[string]string{}
		for _, path := range edited {
			if d, ok := env.Workspace.Document(path); ok {
				before[path] = d.Text
			}
		}
		res, err := env.Editor.Save(ctx, edited)
		switch {
		case errors.Is(err, ErrSaveUnsupported):
			for _, path := range edited {
				failed[path] = "the editor does not save for the agent"
			}
		case err != nil:
			for _, path := range edited {
				failed[path] = err.Error()
			}
		default:
			for path, why := range res.Failed {
				failed[path] = why
			}
			for _, path := range res.Saved {
				d, open := env.Workspace.Document(path)
				if old, ok := before[path]; ok && open && d.Text != old {
					from, to, _ := workspace.ChangedLines(old, d.Text)
					reformatted = append(reformatted, fmt.Sprintf("%s (lines %d-%d)", p.Rel(path), from, to))
				}
			}
		}
	}
	var mine, users []string
	for path, why := range failed {
		mine = append(mine, fmt.Sprintf("%s (your edit; %s)", p.Rel(path), why))
	}
	for _, d := range env.Workspace.Unsaved(p.Root()) {
		if !slices.Contains(edited, d.Path) {
			users = append(users, p.Rel(d.Path)+" (the user's)")
		}
	}
	slices.Sort(mine)
	slices.Sort(reformatted)
	var b strings.Builder
	if len(mine)+len(users) > 0 {
		fmt.Fprintf(&b, "note: the command ran on the files on disk; unsaved in the editor: %s\n", strings.Join(append(mine, users...), ", "))
	}
	if len(reformatted) > 0 {
		fmt.Fprintf(&b, "note: saving changed %s (a formatter on save?); read them again before editing them\n", strings.Join(reformatted, ", "))
	}
	return b.String()
}
