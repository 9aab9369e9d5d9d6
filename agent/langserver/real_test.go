package langserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// realProject is a project served by a real language server (installed by
// testdata/langserver/install.sh), in the sandbox. The tests of this
// package share one per server: starting one costs seconds.
type realProject struct {
	m    *Manager
	sb   *sandbox.Sandbox
	p    *workspace.Project
	ws   *workspace.Workspace
	root string
}

var shared struct {
	mu       sync.Mutex // guards projects
	projects map[string]*realProject
}

func closeShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, p := range shared.projects {
		p.m.Close()
		os.RemoveAll(filepath.Dir(p.root))
	}
}

// realServer returns the shared project served by the server installed in
// bin (relative to testdata/langserver), made of files, or skips the test
// when the server is not installed (never in CI).
func realServer(t *testing.T, bin, program string, files map[string]string) *realProject {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if p := shared.projects[program]; p != nil {
		for name, text := range files { // each test starts from the same files
			os.WriteFile(filepath.Join(p.root, name), []byte(text), 0o644)
		}
		return p
	}
	dir, _ := filepath.Abs(filepath.Join("../../testdata/langserver", bin))
	if _, err := os.Stat(filepath.Join(dir, program)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed: run testdata/langserver/install.sh", program)
		}
		t.Skipf("%s is not installed (testdata/langserver/install.sh)", program)
	}
	tmp, _ := os.MkdirTemp("", "langserver-real")
	root := filepath.Join(tmp, "app")
	os.Mkdir(root, 0o755)
	for name, text := range files {
		os.WriteFile(filepath.Join(root, name), []byte(text), 0o644)
	}
	ws := workspace.New(workspace.UTF16)
	p, err := ws.Add("app", root)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(true)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Generous waits: a loaded machine takes tens of seconds to load tsserver.
	m := New(Options{Env: env, Sandbox: sb, Confine: sandbox.Settings{Mode: sandbox.WorkspaceWrite, Temp: os.TempDir()},
		Wait: 10 * time.Second, StartWait: 120 * time.Second, AskTimeout: 60 * time.Second, Log: t.Logf})
	rp := &realProject{m: m, sb: sb, p: p, ws: ws, root: root}
	if shared.projects == nil {
		shared.projects = map[string]*realProject{}
	}
	shared.projects[program] = rp
	return rp
}

func (rp *realProject) env() *tools.Env {
	// The project's own test would run without asking in the sandbox: so
	// does its language server.
	return &tools.Env{Workspace: rp.ws, Project: "app", Lang: &tools.Lang{Source: rp.m, Seen: &tools.LangSeen{}},
		Sandbox: rp.sb, SandboxSettings: sandbox.Settings{Mode: sandbox.WorkspaceWrite, Temp: os.TempDir()}}
}

// edit writes a file as an edit would, and returns what the edit's result
// adds.
func (rp *realProject) edit(t *testing.T, env *tools.Env, name, text string) string {
	t.Helper()
	path := filepath.Join(rp.root, name)
	before, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(text), 0o644)
	return env.Lang.AfterEdit(context.Background(), env, rp.p, path, string(before), text)
}

func call(t *testing.T, env *tools.Env, name, args string) string {
	t.Helper()
	res := tools.All().Call(context.Background(), env, message.ToolCall{Name: name, Args: args})
	if res.IsError {
		t.Fatalf("%s %s: %s", name, args, res.Content)
	}
	return res.Content
}

func want(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Fatalf("%s lacks %q:\n%s", what, p, got)
		}
	}
}

const (
	goGreet = "package main\n\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n"
	goMain  = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(Greet(\"x\"))\n}\n"
	tsGreet = "export function greet(name: string): string {\n  return \"Hello, \" + name;\n}\n"
	tsMain  = "import { greet } from \"./greet\";\n\nconsole.log(greet(\"x\"));\n"
)

// gopls: an edit that calls an undefined name reports it at its line,
// the fix reports no errors, and definition, references, hover and the
// outline answer across the two files.
func TestGopls(t *testing.T) {
	rp := realServer(t, "bin", "gopls", map[string]string{"go.mod": "module example.com/app\n\ngo 1.22\n", "greet.go": goGreet, "main.go": goMain})
	env := rp.env()
	got := rp.edit(t, env, "main.go", strings.Replace(goMain, "Greet(", "Greett(", 1))
	want(t, "the broken edit's result", got, "diagnostics from gopls", "main.go:6:14: error: undefined: Greett (compiler) [new]")
	got = rp.edit(t, env, "main.go", goMain)
	want(t, "the fix's result", got, "no errors in main.go")
	if strings.Contains(got, "Greett") {
		t.Fatalf("the fix's result: %s", got)
	}
	want(t, "definition", call(t, env, "definition", `{"symbol": "Greet", "path": "main.go"}`), "greet.go:3: func Greet(name string) string {")
	want(t, "references", call(t, env, "references", `{"symbol": "Greet", "path": "greet.go"}`), "greet.go:3: func Greet", "main.go:6: fmt.Println(Greet(\"x\"))")
	want(t, "hover", call(t, env, "hover", `{"symbol": "Greet", "path": "main.go", "line": 6}`), "func Greet(name string) string")
	want(t, "outline", call(t, env, "symbols", `{"path": "greet.go"}`), "3: function Greet")
	want(t, "definition in the standard library", call(t, env, "definition", `{"symbol": "Println", "path": "main.go"}`), "GOROOT/src/fmt/print.go:")
	want(t, "diagnostics", call(t, env, "diagnostics", `{}`), "no problems of severity warning or worse in project app (from gopls)")
}

// The TypeScript server: the same, across two files.
func TestTypeScript(t *testing.T) {
	rp := realServer(t, "node_modules/.bin", "typescript-language-server", map[string]string{"package.json": `{"name": "app"}`,
		"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}`, "greet.ts": tsGreet, "main.ts": tsMain})
	env := rp.env()
	got := rp.edit(t, env, "main.ts", strings.Replace(tsMain, "greet(\"x\")", "greett(\"x\")", 1))
	want(t, "the broken edit's result", got, "diagnostics from typescript-language-server", "main.ts:3:13: error: Cannot find name 'greett'. Did you mean 'greet'? (typescript) [new]")
	got = rp.edit(t, env, "main.ts", tsMain)
	want(t, "the fix's result", got, "no errors in main.ts")
	want(t, "definition", call(t, env, "definition", `{"symbol": "greet", "path": "main.ts", "line": 3}`), "greet.ts:1: export function greet(name: string): string {")
	want(t, "references", call(t, env, "references", `{"symbol": "greet", "path": "greet.ts"}`), "greet.ts:1:", "main.ts:1: import { greet }", "main.ts:3: console.log(greet(\"x\"));")
	want(t, "hover", call(t, env, "hover", `{"symbol": "greet", "path": "main.ts", "line": 3}`), "greet(name: string): string")
	want(t, "outline", call(t, env, "symbols", `{"path": "greet.ts"}`), "1: function greet")
}
