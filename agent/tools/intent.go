package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// Intent is what a tool call is about to do outside the session: change a
// file, run a command, call another program's tool. The tool records it
// (Env.Intent) right before doing it, durably; a run resumed after a crash
// finds the intents of the calls that have no result and settles them
// (Settle) instead of doing them again blindly.
type Intent struct {
	Call    string    `json:"call"`    // the tool call's ID
	Tool    string    `json:"tool"`    // its tool
	Args    string    `json:"args"`    // Hash of its arguments
	Started time.Time `json:"started"` // when it was recorded
	// A file change: the file, whether it is created, and the Hash of the
	// text the change was computed against (the open document's, else the
	// disk's) and of the text it makes.
	Path   string `json:"path,omitempty"`
	Create bool   `json:"create,omitempty"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// BeforeText and AfterText are those texts, for the rewind history
	// (never stored in the intent).
	BeforeText string `json:"-"`
	AfterText  string `json:"-"`
	// A command: its line, and the file its output streams to as it runs.
	Command string `json:"command,omitempty"`
	Spool   string `json:"spool,omitempty"`
	// Background: the command was to start in the background.
	Background bool `json:"background,omitzero"`
}

// Hash is the hash of a text an intent records (hex SHA-256, 128 bits).
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// intend records in through the run's Intent port, if it has one. The
// caller must not do what in says when it fails.
func (e *Env) intend(ctx context.Context, in Intent) error {
	if e.Intent == nil {
		return nil
	}
	return e.Intent(ctx, in)
}

// maxSettleOutput bounds the spool read back for an interrupted command.
const maxSettleOutput = 1 << 20

// Settle answers a call that an interrupted run had begun: in is its
// intent, later the intents of the calls that followed it in the same task
// (calls on one file). A file change whose file has the text it makes is
// reported made; one whose file still has the text it was computed against
// is to be made now (rerun: Call it); otherwise the model is told the file
// changed since, and where the text now is. A command or another program's
// tool is never run again: the model is told its outcome is unknown, with
// the output captured before the interruption.
func (s Set) Settle(ctx context.Context, env *Env, call message.ToolCall, in Intent, later []Intent) (res Result, rerun bool) {
	if in.Path != "" {
		return settleEdit(ctx, env, call, in, later)
	}
	started := in.Started.Local().Format("15:04:05")
	what := fmt.Sprintf("calling %s", call.Name)
	if t, ok := s[call.Name]; ok && t.External != "" {
		what = fmt.Sprintf("calling %s of %s", call.Name, t.External)
	}
	if in.Command != "" {
		what = fmt.Sprintf("running `%s`", Clip(in.Command, 200))
	}
	content := fmt.Sprintf("error: interrupted while %s (started %s); outcome unknown: check before repeating.", what, started)
	if in.Background {
		content = fmt.Sprintf("error: interrupted while starting `%s` in the background (started %s): background processes end with their run, so it is not running now; it was not started again: start it again if it is still needed.",
			Clip(in.Command, 200), started)
		return Result{Content: content, IsError: true, Summary: "interrupted: " + Clip(in.Command, 80)}, false
	}
	if in.Command != "" {
		out, total := readSpool(in.Spool)
		switch {
		case total == 0:
			content += "\nNo output was captured before the interruption."
		default:
			content += fmt.Sprintf("\nOutput captured before the interruption (%d bytes):\n%s", total, Cut(out, env.maxOutput()-len(content)-64))
		}
	}
	return Result{Content: content, IsError: true, Summary: "interrupted: " + strings.TrimPrefix(what, "running ")}, false
}

// readSpool reads a command's spooled output, at most maxSettleOutput
// bytes of it (its head), and returns it and the spool's size.
func readSpool(path string) (string, int64) {
	if path == "" {
		return "", 0
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", 0
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxSettleOutput))
	return string(b), fi.Size()
}

// settleEdit settles an interrupted edit_file or create_file call.
func settleEdit(ctx context.Context, env *Env, call message.ToolCall, in Intent, later []Intent) (Result, bool) {
	p, ok := env.Workspace.ProjectFor(in.Path)
	if !ok {
		return errorResult(fmt.Sprintf("the run was interrupted while changing %s, which is outside every open project now: check it before changing it again", in.Path)), false
	}
	rel := p.Rel(in.Path)
	text, _, _, err := current(ctx, env, p, in.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorResult(fmt.Sprintf("the run was interrupted while changing %s, which cannot be read now (%v): check it before changing it again", rel, cleanErr(err, p.Root()))), false
	}
	now := Hash(text)
	made := exists && now == in.After
	for _, l := range later {
		made = made || (l.Path == in.Path && l.Before == in.After && !l.Create)
	}
	verb := "edited"
	if in.Create {
		verb = "created"
	}
	switch {
	case made:
		return Result{Content: fmt.Sprintf("%s %s (the run was interrupted after this change was made; it was not made again)", verb, rel),
			Summary: verb + " " + rel, Edits: []EditReport{{Path: in.Path, Applied: true}}}, false
	case in.Create && !exists, !in.Create && exists && now == in.Before:
		return Result{}, true // not made, and nothing changed since: make it now
	case in.Create:
		return errorResult(fmt.Sprintf("the run was interrupted while creating %s, which exists now with other content; it was not created again. Read it before changing it.", rel)), false
	case !exists:
		return errorResult(fmt.Sprintf("the run was interrupted while editing %s, which does not exist now; the edit was not made again.", rel)), false
	}
	return errorResult(fmt.Sprintf("the run was interrupted while editing %s, and the file has changed since the edit was computed, so it was not made again%s. Read the file before editing it.",
		rel, where(text, call.Args))), false
}

// where says where the text an edit_file call replaces, or the text it
// writes, is in text now ("" when the call names neither).
func where(text, args string) string {
	var a struct {
		OldText *string `json:"old_text"`
		NewText string  `json:"new_text"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	lines := func(s string) string {
		i := strings.Index(text, s)
		from := strings.Count(text[:i], "\n") + 1
		to := from + strings.Count(strings.TrimSuffix(s, "\n"), "\n")
		if n := strings.Count(text, s); n > 1 {
			return fmt.Sprintf("lines %d-%d (and %d more places)", from, to, n-1)
		}
		return fmt.Sprintf("lines %d-%d", from, to)
	}
	switch {
	case a.NewText != "" && strings.Contains(text, a.NewText):
		return "; the new text is at " + lines(a.NewText) + " now (the edit may have been made, then the file changed)"
	case a.OldText != nil && *a.OldText != "" && strings.Contains(text, *a.OldText):
		return "; the text it replaces is at " + lines(*a.OldText) + " now"
	case a.OldText != nil:
		return "; neither the text it replaces nor its new text is in the file now"
	}
	return ""
}

func errorResult(msg string) Result {
	return Result{Content: "error: " + msg, IsError: true, Summary: Clip(msg, 80)}
}

// errNotRecorded is the error of a side effect not made because its
// intent could not be recorded.
func errNotRecorded(what string, err error) Result {
	return errorResult(fmt.Sprintf("%s was not done: %v", what, err))
}
