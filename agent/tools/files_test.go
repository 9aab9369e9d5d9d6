//go:build unix

package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// read_file numbers lines as %5d did, wider numbers included.
func TestWriteNumbered(t *testing.T) {
	for _, n := range []int{1, 9, 10, 99, 999, 9999, 10000, 99999, 100000, 1234567} {
		var got strings.Builder
		writeNumbered(&got, n, "\tline")
		if want := fmt.Sprintf("%5d| %s\n", n, "\tline"); got.String() != want {
			t.Errorf("line %d: %q, want %q", n, got.String(), want)
		}
	}
}

// read_file's line ranges, those past the end and empty files included,
// answer without an error.
func TestReadFileRanges(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\r\nthree"), 0o644)
	os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o644)
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	env := &Env{Workspace: ws, Project: "p"}
	for _, tt := range []struct {
		args, want string
	}{
		{`{"path":"a.txt"}`, "a.txt (3 lines)\n    1| one\n    2| two\n    3| three\n"},
		{`{"path":"a.txt","start_line":2}`, "a.txt (3 lines)\n    2| two\n    3| three\n"},
		{`{"path":"a.txt","start_line":2,"end_line":2}`, "a.txt (3 lines)\n    2| two\n"},
		{`{"path":"a.txt","end_line":99}`, "a.txt (3 lines)\n    1| one\n    2| two\n    3| three\n"},
		{`{"path":"a.txt","start_line":50}`, "a.txt (3 lines)\n"},
		{`{"path":"a.txt","start_line":3,"end_line":1}`, "a.txt (3 lines)\n"},
		{`{"path":"empty.txt"}`, "empty.txt (0 lines)\n"},
	} {
		res := All().Call(context.Background(), env, callOf("read_file", tt.args))
		if res.IsError || res.Content != tt.want {
			t.Errorf("%s: %q (error %v), want %q", tt.args, res.Content, res.IsError, tt.want)
		}
	}
}
