package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// Bounds of the wait for the editor's view of an applied edit: an open
// document's didChange, or the didOpen of one the editor opens to edit it.
const (
	awaitChange = 10 * time.Second
	awaitOpen   = 2 * time.Second
)

// applyEdit sends one edit, computed against before, through the editor and
// reports the outcome as a result. The caller holds the document's edit lock
// (workspace.LockEdits). An edit the editor says it applied is checked
// against the text the editor then has: one that did not land as the agent
// wrote it (a stale buffer, parts unticked or changed by the user in a
// review) is an error that says what happened.
//
// d is the decision on the file's path (Project.Decide): the editor asks for
// confirmation by it, and a file that defines the project's commands, by
// either of its names, marks them changed.
func applyEdit(ctx context.Context, env *Env, p *workspace.Project, d workspace.Decision, fe FileEdit, before, done string) (Result, error) {
	if env.Editor == nil {
		return errorf("no editor is connected to apply edits")
	}
	rel := d.Rel
	fe.Path, fe.Rel, fe.Decision = d.Abs, rel, d
	var changed []string
	if _, ok := d.Match(workspace.CommandFiles); ok {
		// Before the edit is sent: a command running in parallel must not
		// trust a definition that is being changed.
		changed = []string{p.Name()}
		if env.Trust != nil {
			env.Trust.Change(p.Name())
		}
	}
	enc := env.Workspace.Encoding()
	changes := make([]workspace.Change, len(fe.Edits))
	for i, te := range fe.Edits {
		r := te.Range
		changes[i] = workspace.Change{Range: &r, Text: te.NewText}
	}
	if fe.Create {
		changes = []workspace.Change{{Text: fe.Edits[0].NewText}}
	}
	want, err := workspace.ApplyChanges(before, changes, enc)
	if err != nil {
		return errorf("the edit of %s does not apply to its text: %v", rel, err)
	}
	if err := env.intend(ctx, Intent{Path: fe.Path, Create: fe.Create, Before: Hash(before), After: Hash(want), BeforeText: before, AfterText: want}); err != nil {
		res := errNotRecorded("the edit of "+rel, err)
		res.CommandFilesChanged = changed
		return res, nil
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
		return Result{Content: fmt.Sprintf("error: the editor did not apply the edit of %s (%s); the file is unchanged. Read it again before editing it.", rel, reason),
			IsError: true, Summary: "edit of " + rel + " refused", Edits: report, CommandFilesChanged: changed}, nil
	}
	got, seen, onDisk := landed(ctx, env, fe.Path, want, fe.Version, fe.Open)
	if !seen {
		// The editor applied it but has not shown the result: a save must
		// put the edit on disk, not the server's older copy (Saved).
		version := int32(-1)
		if fe.Open {
			version = fe.Version
		}
		env.Workspace.EditUnseen(fe.Path, want, version)
	}
	if !onDisk {
		env.Workspace.NoteEdited(fe.Path, env.Session) // in an editor buffer: saved before commands run
	}
	if res.Note != "" {
		done += " (" + res.Note + ")"
	}
	switch {
	case !seen || got == want:
		done += env.Lang.AfterEdit(ctx, env, p, fe.Path, before, want) // the errors the language server now reports
		return Result{Content: done, Summary: "edited " + rel, Edits: report, CommandFilesChanged: changed}, nil
	case got == before:
		report[0].Applied = false
		return Result{Content: fmt.Sprintf("error: the editor reported the edit of %s applied, but the file did not change (the user may have unticked it in the preview). Read the file again before editing it.", rel),
			IsError: true, Summary: "edit of " + rel + " not applied", Edits: report, CommandFilesChanged: changed}, nil
	}
	from, to, _ := workspace.ChangedLines(want, got)
	return Result{Content: fmt.Sprintf("error: the edit of %s was applied with changes by the user at lines %d-%d (changed or kept in part in the review, or typed meanwhile): the file is not what you wrote there. Read the file again before editing it.", rel, from, to),
		IsError: true, Summary: "edit of " + rel + " changed", Edits: report, CommandFilesChanged: changed}, nil
}

// landed returns the text of path once the editor shows the applied edit:
// the document's next version when it was open, else the disk. seen is
// false when neither shows it (an open document whose change has not come
// within the bound; a file the editor holds in a buffer it has not shown the
// server yet): then nothing can be checked, and the next edit of the file
// first waits a moment for the editor to open it (workspace.ExpectOpen).
// onDisk: the editor wrote the edit to the file (the headless client).
func landed(ctx context.Context, env *Env, path, want string, version int32, open bool) (text string, seen, onDisk bool) {
	if r, ok := env.Editor.(TextReader); ok && !open {
		if text, ok, err := r.ReadText(ctx, path); err == nil && ok {
			return text, true, false // the editor's own text: it may or may not be on disk yet
		}
	}
	if !open {
		if b, err := os.ReadFile(path); err == nil && string(b) == want {
			if _, nowOpen := env.Workspace.Document(path); !nowOpen {
				return want, true, true
			}
		}
		if d, nowOpen := env.Workspace.Document(path); nowOpen {
			return d.Text, true, false
		}
		env.Workspace.ExpectOpen(path)
		return "", false, false
	}
	wctx, cancel := context.WithTimeout(ctx, awaitChange)
	defer cancel()
	if d, ok := env.Workspace.AwaitDocument(wctx, path, version); ok {
		return d.Text, true, false
	}
	return "", false, false
}

// current returns the text an edit of path is computed against and the
// version it carries: the open document's, else the file's. A file the
// editor was just asked to change without showing it to the server is
// given a moment to appear, so that a second edit is not computed against
// a disk the first did not reach.
func current(ctx context.Context, env *Env, p *workspace.Project, abs string) (text string, doc workspace.Document, open bool, err error) {
	if env.Workspace.Expecting(abs) {
		wctx, cancel := context.WithTimeout(ctx, awaitOpen)
		env.Workspace.AwaitDocument(wctx, abs, -1)
		cancel()
		env.Workspace.ExpectOpenDone(abs)
	}
	doc, open = env.Workspace.Document(abs)
	if open {
		if len(doc.Text) > workspace.MaxReadSize {
			return "", doc, open, fmt.Errorf("%s is %d bytes, over the %d-byte limit of an edit", p.Rel(abs), len(doc.Text), workspace.MaxReadSize)
		}
		return doc.Text, doc, true, nil
	}
	b, err := env.readFile(ctx, p, abs, workspace.MaxReadSize)
	return string(b), doc, false, err
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
		p, d, err := env.decide(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		abs := d.Abs
		defer env.Workspace.LockEdits(abs)() // parallel edits of one file: one after the other, each on the text before it left
		// The text and the version its positions refer to, read together:
		// the edit carries that version, so an editor whose buffer has moved
		// on since refuses it instead of applying it at stale positions.
		text, doc, open, err := current(ctx, env, p, abs)
		if errors.Is(err, fs.ErrNotExist) {
			return errorf("read %s: no such file (use create_file for a new file)", a.Path)
		} else if err != nil {
			return errorf("read %s: %v", a.Path, cleanErr(err, p.Root()))
		}
		var from, to int
		eol := lineEnding(text) // a CRLF file keeps CRLF
		if a.OldText != nil && !strings.Contains(text, *a.OldText) {
			*a.OldText = withEOL(*a.OldText, eol)
		}
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
		a.NewText = withEOL(a.NewText, eol)
		enc := env.Workspace.Encoding()
		fe := FileEdit{Path: abs, Label: "agent: edit " + d.Rel, Open: open, Version: doc.Version, Edits: []TextEdit{{
			Range:   workspace.Range{Start: workspace.PositionOf(text, from, enc), End: workspace.PositionOf(text, to, enc)},
			NewText: a.NewText,
		}}}
		return applyEdit(ctx, env, p, d, fe, text, fmt.Sprintf("edited %s", d.Rel))
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
		p, d, err := env.decide(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		abs := d.Abs
		defer env.Workspace.LockEdits(abs)()
		if _, err := os.Lstat(abs); err == nil {
			return errorf("%s already exists; use edit_file", a.Path)
		}
		if _, open := env.Workspace.Document(abs); open {
			return errorf("%s is open in the editor; use edit_file", a.Path)
		}
		fe := FileEdit{Path: abs, Create: true, Label: "agent: create " + d.Rel,
			Edits: []TextEdit{{NewText: a.Content}}}
		return applyEdit(ctx, env, p, d, fe, "", fmt.Sprintf("created %s (%d bytes)", d.Rel, len(a.Content)))
	},
}
