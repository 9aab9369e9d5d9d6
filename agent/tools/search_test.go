//go:build unix

package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// naiveLines is what grep means by the lines of b that re matches: b split
// at newlines (none after the last), each line matched on its own.
func naiveLines(re *regexp.Regexp, b []byte) []int {
	var ns []int
	b = bytes.TrimSuffix(b, []byte{'\n'})
	if len(b) == 0 {
		return nil
	}
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if re.Match(line) {
			ns = append(ns, i+1)
		}
	}
	return ns
}

// matchedLines is what lineMatcher finds in b, checking that it hands out
// each line's text.
func matchedLines(t testing.TB, m *lineMatcher, b []byte) []int {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var ns []int
	m.each(b, func(n int, line []byte) bool {
		if n < 1 || n > len(lines) || lines[n-1] != string(line) {
			t.Errorf("line %d handed out as %q", n, line)
		}
		ns = append(ns, n)
		return true
	})
	return ns
}

var matcherCases = []struct{ pattern, text string }{
	{`func \w+Handler\(`, "package h\nfunc fooHandler() {}\nfunc barHandler(x int)\nvar Handler = 1\n"},
	{`[A-Z][a-z]+Error\(`, "return NewError(x)\nreturn nil\n\tpanic(ParseError(e))"},
	{`^import`, "x import\nimport \"fmt\"\nimport (\n"},
	{`\)$`, "f()\ng() \nh(\r\nk()"},
	{`\Aa`, "ab\nac\nba\n"},
	{`b\z`, "ab\ncb\nbc"},
	{`a\sb`, "a\nb\na b\n"},       // \s never spans a line
	{`x*`, "a\n\nb\n"},            // empty matches: every line, none after the last newline
	{`(?i)hello`, "HeLLo\nbye\n"}, // case folded: no literal
	{`hello|world`, "say world\nhello\nnone\n"},
	{`(ab)+c`, "ababc\nabd\n"},
	{`a.c`, "a\nc\nabc\n"},
	{`[^a]b`, "a\nb\nxb\n"},
	{`\bword\b`, "word\nswords\n word.\n"},
	{`é+t`, "été\nete\n"},
	{`x`, ""},
	{`x`, "\n\n\nx"},
	{``, "\n\n"}, // an empty last line (found by fuzzing)
	{`^$`, "a\n\nb\n\n"},
}

// The matcher finds exactly the lines a line-by-line match finds, whatever
// the pattern's anchors, literals or classes.
func TestLineMatcherAgreesWithLines(t *testing.T) {
	for _, tt := range matcherCases {
		for _, fold := range []bool{false, true} {
			m, err := newLineMatcher(tt.pattern, fold)
			if err != nil {
				t.Fatal(err)
			}
			got, want := matchedLines(t, m, []byte(tt.text)), naiveLines(m.line, []byte(tt.text))
			if !slices.Equal(got, want) {
				t.Errorf("%q (fold %v) in %q: lines %v, want %v", tt.pattern, fold, tt.text, got, want)
			}
		}
	}
	// Patterns with a required literal use it; others do not.
	for pattern, lit := range map[string]string{`func \w+Handler\(`: "Handler(", `[A-Z][a-z]+Error\(`: "Error(",
		`(ab)+c`: "ab", `hello|world`: "", `(?i)hello`: "", `x*`: ""} {
		m, _ := newLineMatcher(pattern, false)
		if string(m.literal) != lit {
			t.Errorf("%q: literal %q, want %q", pattern, m.literal, lit)
		}
	}
}

func FuzzLineMatcher(f *testing.F) {
	for _, tt := range matcherCases {
		f.Add(tt.pattern, tt.text)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		m, err := newLineMatcher(pattern, false)
		if err != nil {
			return
		}
		if got, want := matchedLines(t, m, []byte(text)), naiveLines(m.line, []byte(text)); !slices.Equal(got, want) {
			t.Errorf("%q in %q: lines %v, want %v", pattern, text, got, want)
		}
	})
}

// searchEnv is a project at root with HOME and XDG_CONFIG_HOME kept apart
// from the user's, so their global excludes do not apply.
func searchEnv(t *testing.T, root string) (*Env, *workspace.Workspace) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	return &Env{Workspace: ws, Project: "p"}, ws
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Search reports the first 100 matching lines in the walk's order, the same
// ones every time although files are read in parallel, and says it stopped.
func TestSearchFirstMatchesInWalkOrder(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = "one\nneedle\nthree\nneedle again\n"
	}
	writeTree(t, root, files)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names) // the walk's order: folders and names sorted
	env, _ := searchEnv(t, root)
	for range 5 {
		res := All().Call(context.Background(), env, callOf("search", `{"pattern":"needle"}`))
		lines := strings.Split(strings.TrimSpace(res.Content), "\n")
		if len(lines) != 101 || lines[100] != "[stopped at 100 matches; narrow the pattern or glob]" {
			t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
		}
		for i, l := range lines[:100] {
			name := names[i/2]
			wantLine := name + ":2: needle"
			if i%2 == 1 {
				wantLine = name + ":4: needle again"
			}
			if l != wantLine {
				t.Fatalf("line %d: %q, want %q", i, l, wantLine)
			}
		}
	}
}

// Search leaves out ignored, binary and linked files, reads hidden files,
// vendor folders and unsaved buffers, names files too large to search, and
// list_files lists what the ignore files leave in.
func TestSearchWhatIsSearched(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".git/HEAD":         "ref: refs/heads/main\nneedle\n",
		".gitignore":        "*.log\nout/\n",
		"a.go":              "package a // needle\n",
		"app.log":           "needle\n",
		"out/gen.go":        "needle\n",
		"vendor/v/v.go":     "// needle\n",
		".config/x.toml":    "needle = 1\n",
		"bin.dat":           "needle\x00\x01",
		"huge.txt":          strings.Repeat("needle\n", workspace.MaxSearchSize/7+1),
		"buffer.go":         "package b\n",
		"node_modules/m.js": "needle\n",
	})
	if err := os.Symlink("a.go", filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	env, ws := searchEnv(t, root)
	ws.Open(filepath.Join(root, "buffer.go"), 2, "package b // needle, unsaved\n")
	res := All().Call(context.Background(), env, callOf("search", `{"pattern":"needle"}`))
	want := ".config/x.toml:1: needle = 1\na.go:1: package a // needle\nbuffer.go:1: package b // needle, unsaved\n" +
		"node_modules/m.js:1: needle\nvendor/v/v.go:1: // needle\n" +
		fmt.Sprintf("[not searched, over %d bytes: huge.txt; read them by line range]\n", workspace.MaxSearchSize)
	if res.IsError || res.Content != want {
		t.Errorf("search:\n%s\nwant:\n%s", res.Content, want)
	}
	res = All().Call(context.Background(), env, callOf("search", `{"pattern":"needle","glob":"*.go"}`))
	if want := "a.go:1: package a // needle\nbuffer.go:1: package b // needle, unsaved\nvendor/v/v.go:1: // needle\n"; res.Content != want {
		t.Errorf("search *.go:\n%s\nwant:\n%s", res.Content, want)
	}
	res = All().Call(context.Background(), env, callOf("list_files", `{}`))
	if want := ".config/x.toml\n.gitignore\na.go\nbin.dat\nbuffer.go\nhuge.txt\nlink.go\nnode_modules/m.js\nvendor/v/v.go"; res.Content != want {
		t.Errorf("list_files:\n%s\nwant:\n%s", res.Content, want)
	}
	if res.Summary != "listed 9 files" {
		t.Errorf("summary %q", res.Summary)
	}
}
