//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-lsp/agent-lsp/workspace"
)

func TestLineEndings(t *testing.T) {
	cases := []struct{ file, in, want string }{
		{"a\r\nb\r\n", "x\ny\n", "x\r\ny\r\n"},   // a Windows file keeps CRLF
		{"a\r\nb\r\n", "x\r\ny\n", "x\r\ny\r\n"}, // mixed input made whole
		{"a\r\nb\r\n", "one line", "one line"},   // nothing to change
		{"a\nb\n", "x\ny\n", "x\ny\n"},           // a Unix file keeps LF
		{"a\nb\r\n", "x\ny\n", "x\ny\n"},         // the first line decides
		{"", "x\ny", "x\ny"},                     // an empty file: LF
		{"\r\n", "\n", "\r\n"},                   // a file of one CRLF
		{"lone\rcarriage\n", "x\ny", "x\ny"},     // a lone CR is not CRLF
	}
	for _, c := range cases {
		if got := withEOL(c.in, lineEnding(c.file)); got != c.want {
			t.Errorf("withEOL(%q, lineEnding(%q)) = %q, want %q", c.in, c.file, got, c.want)
		}
	}
}

// A CRLF file edited with the "\n" text the model reads and writes: the
// old text is found, and the edit the editor gets keeps CRLF.
func TestEditKeepsCRLF(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\r\ntwo\r\nthree\r\n"), 0o644)
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	ed := &refusingEditor{}
	env := &Env{Workspace: ws, Project: "p", Editor: ed, Trust: &changedTrust{}}
	call := func(args string) { All().Call(context.Background(), env, callOf("edit_file", args)) }
	call(`{"path":"a.txt","old_text":"one\ntwo\n","new_text":"1\n2\n"}`)
	call(`{"path":"a.txt","start_line":3,"new_text":"3\nthree and a half"}`)
	if len(ed.edits) != 2 {
		t.Fatalf("the editor got %d edits, want 2", len(ed.edits))
	}
	if got := ed.edits[0].Edits[0]; got.NewText != "1\r\n2\r\n" || got.Range.End.Line != 2 || got.Range.End.Character != 0 {
		t.Errorf("old_text edit: %+v", got)
	}
	if got := ed.edits[1].Edits[0].NewText; got != "3\r\nthree and a half\r\n" {
		t.Errorf("line edit: %q", got)
	}
}
