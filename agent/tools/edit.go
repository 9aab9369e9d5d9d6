package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// applyEdit sends one edit through the editor and reports the outcome as a result.
func applyEdit(ctx context.Context, env *Env, p *workspace.Project, fe FileEdit, done string) (Result, error) {
	if env.Editor == nil {
		return errorf("no editor is connected to apply edits")
	}
	rel := p.Rel(fe.Path)
	fe.Rel = rel
	if r, ok := p.MatchFile(workspace.ProtectedPaths, fe.Path); ok {
		fe.Protected = r.Why
	}
	var changed []string
	if _, ok := p.MatchFile(workspace.CommandFiles, fe.Path); ok {
		// Before the edit is sent: a command running in parallel must not
		// trust a definition that is being changed.
		changed = []string{p.Name()}
		if env.Trust != nil {
			env.Trust.Change(p.Name())
		}
	}
	p.BeginChange(fe.Path)
	res, err := env.Editor.Edit(ctx, fe)
	p.EndChange(fe.Path)
	if err != nil {
		return Result{Content: fmt.Sprintf("error: the edit of %s could not be sent to the editor: %v", rel, err), IsError: true,
			Summary: "edit of " + rel + " failed", CommandFilesChanged: changed}, nil
	}
	report := []EditReport{{Path: fe.Path, Applied: res.Applied}}
	if !res.Applied {
		reason := res.FailureReason
		if reason == "" {
			reason = "no reason given"
		}
		return Result{Content: fmt.Sprintf("error: the editor refused the edit of %s (%s); the file is unchanged", rel, reason),
			IsError: true, Summary: "edit of " + rel + " refused", Edits: report, CommandFilesChanged: changed}, nil
	}
	return Result{Content: done, Summary: "edited " + rel, Edits: report, CommandFilesChanged: changed}, nil
}

var editFile = Tool{
	Name: "edit_file",
	Description: "Change an existing file. Either replace old_text (which must occur exactly once; include enough context) with new_text, " +
		"or replace the lines start_line..end_line (1-based, inclusive, as read_file numbers them) with new_text. " +
		"The editor applies the change; the result says whether it did.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "File path relative to the project root."},
		"old_text": {"type": "string", "description": "Exact text to replace."},
		"new_text": {"type": "string", "description": "Replacement text."},
		"start_line": {"type": "integer"},
		"end_line": {"type": "integer"},
		` + projectArg + `}, "required": ["path", "new_text"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Path, Project string
			OldText       *string `json:"old_text"`
			NewText       string  `json:"new_text"`
			StartLine     int     `json:"start_line"`
			EndLine       int     `json:"end_line"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, abs, err := env.resolve(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		b, err := env.Workspace.ReadFile(p, abs, workspace.MaxReadSize)
		if errors.Is(err, fs.ErrNotExist) {
			return errorf("read %s: no such file (use create_file for a new file)", a.Path)
		} else if err != nil {
			return errorf("read %s: %v", a.Path, cleanErr(err, p.Root()))
		}
		text := string(b)
		var from, to int
		switch {
		case a.OldText != nil:
			if *a.OldText == "" {
				return errorf("old_text is empty; give the exact text to replace")
			}
			n := strings.Count(text, *a.OldText)
			if n == 0 {
				return errorf("old_text does not occur in %s; read the file again and copy the text exactly", a.Path)
			}
			if n > 1 {
				return errorf("old_text occurs %d times in %s; include more context so it occurs once", n, a.Path)
			}
			from = strings.Index(text, *a.OldText)
			to = from + len(*a.OldText)
		case a.StartLine > 0:
			end := a.EndLine
			if end == 0 {
				end = a.StartLine
			}
			total := strings.Count(text, "\n") + 1
			if a.StartLine > total || end < a.StartLine || end > total {
				return errorf("lines %d..%d are outside %s (%d lines)", a.StartLine, end, a.Path, total)
			}
			from = workspace.Offset(text, workspace.Position{Line: uint32(a.StartLine - 1)}, workspace.UTF8)
			to = workspace.Offset(text, workspace.Position{Line: uint32(end)}, workspace.UTF8)
			if end == total {
				to = len(text)
			}
			if to < len(text) || strings.HasSuffix(text, "\n") {
				if a.NewText != "" && !strings.HasSuffix(a.NewText, "\n") {
					a.NewText += "\n"
				}
			}
		default:
			return errorf("give old_text, or start_line (and end_line)")
		}
		enc := env.Workspace.Encoding()
		fe := FileEdit{Path: abs, Label: "agent: edit " + p.Rel(abs), Edits: []TextEdit{{
			Range:   workspace.Range{Start: workspace.PositionOf(text, from, enc), End: workspace.PositionOf(text, to, enc)},
			NewText: a.NewText,
		}}}
		return applyEdit(ctx, env, p, fe, fmt.Sprintf("edited %s", p.Rel(abs)))
	},
}

var createFile = Tool{
	Name:        "create_file",
	Description: "Create a new file with the given content (folders are created as needed). Fails if the file exists; use edit_file for existing files.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "New file path relative to the project root."},
		"content": {"type": "string"},
		` + projectArg + `}, "required": ["path", "content"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Path, Content, Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, abs, err := env.resolve(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		if _, err := os.Lstat(abs); err == nil {
			return errorf("%s already exists; use edit_file", a.Path)
		}
		if _, open := env.Workspace.Document(abs); open {
			return errorf("%s is open in the editor; use edit_file", a.Path)
		}
		fe := FileEdit{Path: abs, Create: true, Label: "agent: create " + p.Rel(abs),
			Edits: []TextEdit{{NewText: a.Content}}}
		return applyEdit(ctx, env, p, fe, fmt.Sprintf("created %s (%d bytes)", p.Rel(abs), len(a.Content)))
	},
}
