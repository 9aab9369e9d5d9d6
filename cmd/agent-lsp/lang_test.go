//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// languageServerPath puts the language server installed by
// testdata/langserver/install.sh first on PATH, or skips the test when it
// is not installed (never in CI).
func languageServerPath(t *testing.T, bin, program string) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("../../testdata/langserver", bin))
	if _, err := os.Stat(filepath.Join(dir, program)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed: run testdata/langserver/install.sh", program)
		}
		t.Skipf("%s is not installed (testdata/langserver/install.sh)", program)
	}
	return "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// A headless run with a real language server: the scripted model makes a
// function call an undefined name, and the edit's result names the error at
// its line; the fix's result reports no errors; definition and references
// across two files answer the right lines.
func TestHeadlessLanguageServers(t *testing.T) {
	for _, tc := range []struct {
		name, bin, program string
		files              map[string]string
		main, broken, fix  [2]string // file, old text -> new text
		definition         string    // arguments
		references         string
		wants              [][]string // per tool result, in order
	}{
		{name: "gopls", bin: "bin", program: "gopls",
			files: map[string]string{"go.mod": "module example.com/app\n\ngo 1.22\n",
				"greet.go": "package main\n\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n",
				"main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(Greet(\"x\"))\n}\n"},
			main: [2]string{"main.go", ""}, broken: [2]string{"Greet(\"x\")", "Greett(\"x\")"}, fix: [2]string{"Greett(\"x\")", "Greet(\"x\")"},
			definition: `{"symbol": "Greet", "path": "main.go"}`, references: `{"symbol": "Greet", "path": "greet.go"}`,
			wants: [][]string{
				{"edited main.go", "diagnostics from gopls", "main.go:6:14: error: undefined: Greett (compiler) [new]"},
				{"edited main.go", "no errors in main.go"},
				{"greet.go:3: func Greet(name string) string {"},
				{"greet.go:3: func Greet", "main.go:6: fmt.Println(Greet(\"x\"))"},
			}},
		{name: "typescript", bin: "node_modules/.bin", program: "typescript-language-server",
			files: map[string]string{"package.json": `{"name": "app"}`,
				"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}`,
				"greet.ts":      "export function greet(name: string): string {\n  return \"Hello, \" + name;\n}\n",
				"main.ts":       "import { greet } from \"./greet\";\n\nconsole.log(greet(\"x\"));\n"},
			main: [2]string{"main.ts", ""}, broken: [2]string{"greet(\"x\")", "greett(\"x\")"}, fix: [2]string{"greett(\"x\")", "greet(\"x\")"},
			definition: `{"symbol": "greet", "path": "main.ts", "line": 3}`, references: `{"symbol": "greet", "path": "greet.ts"}`,
			wants: [][]string{
				{"edited main.ts", "diagnostics from typescript-language-server", "main.ts:3:13: error: Cannot find name 'greett'. Did you mean 'greet'? (typescript) [new]"},
				{"edited main.ts", "no errors in main.ts"},
				{"greet.ts:1: export function greet(name: string): string {"},
				{"greet.ts:1:", "main.ts:1: import { greet }", "main.ts:3: console.log(greet(\"x\"));"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := languageServerPath(t, tc.bin, tc.program)
			c := newCLI(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": tc.main[0], "old_text": tc.broken[0], "new_text": tc.broken[1]})}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": tc.main[0], "old_text": tc.fix[0], "new_text": tc.fix[1]})}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "definition", Args: []byte(tc.definition)}}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "references", Args: []byte(tc.references)}}},
				scripted.Turn{Text: "checked"})
			ws := filepath.Join(t.TempDir(), "app")
			os.Mkdir(ws, 0o755)
			for name, text := range tc.files {
				os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644)
			}
			cmd := c.command("run", "--workspace", ws, "--json", "--durability", "exit", "--diagnostics-wait", "10000", "--context-tokens", "32768", "break it and fix it")
			cmd.Env = append(cmd.Env, path)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			_, res := jsonLines(t, out.String())
			if res["status"] != "done" {
				t.Fatalf("result %v\n%s", res, errOut.String())
			}
			reqs := c.srv.Requests()
			if len(reqs) != len(tc.wants)+1 {
				t.Fatalf("%d model calls", len(reqs))
			}
			for i, parts := range tc.wants {
				msgs := reqs[i+1].Messages
				got := msgs[len(msgs)-1].Content
				for _, p := range parts {
					if !strings.Contains(got, p) {
						t.Fatalf("tool result %d lacks %q:\n%s", i+1, p, got)
					}
				}
			}
			var offered []string
			for _, tl := range reqs[0].Tools {
				offered = append(offered, tl.Function.Name)
			}
			if o := strings.Join(offered, " "); !strings.Contains(o, "diagnostics") || !strings.Contains(o, "references") {
				t.Fatalf("tools offered: %s", o)
			}
		})
	}
}

// doctor lists each project's language server: the one found on PATH, why
// there is none, and the settings' choice; it starts none.
func TestDoctorListsLanguageServers(t *testing.T) {
	bin := t.TempDir()
	started := filepath.Join(t.TempDir(), "started")
	os.WriteFile(filepath.Join(bin, "gopls"), []byte("#!/bin/sh\ntouch "+started+"\n"), 0o755)
	goProject, tsProject := filepath.Join(t.TempDir(), "gop"), filepath.Join(t.TempDir(), "tsp")
	os.Mkdir(goProject, 0o755)
	os.Mkdir(tsProject, 0o755)
	os.WriteFile(filepath.Join(goProject, "go.mod"), []byte("module x\n"), 0o644)
	os.WriteFile(filepath.Join(tsProject, "package.json"), []byte(`{"name": "x", "devDependencies": {"typescript": "5"}}`), 0o644)
	env := doctorEnv("OPENAI_BASE_URL="+closedEndpoint(t), "PATH="+bin+":/usr/bin:/bin")
	type lang struct {
		Name, Command, Path, Source, Note string
		Found                             bool
	}
	read := func(out string) map[string][]lang {
		var r struct {
			Projects []struct {
				Name            string `json:"name"`
				LanguageServers []lang `json:"languageServers"`
			} `json:"projects"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		m := map[string][]lang{}
		for _, p := range r.Projects {
			m[p.Name] = p.LanguageServers
		}
		return m
	}
	out, _, _ := runDoctor(t, env, goProject, "--json", "--workspace", goProject, "--workspace", tsProject)
	got := read(out)
	if g := got["gop"]; len(g) != 1 || !g[0].Found || g[0].Path != filepath.Join(bin, "gopls") || g[0].Source != "built-in" {
		t.Fatalf("go project: %+v", g)
	}
	if ts := got["tsp"]; len(ts) != 1 || ts[0].Found || !strings.Contains(ts[0].Note, "typescript-language-server not found on PATH") {
		t.Fatalf("typescript project: %+v", ts)
	}
	out, _, _ = runDoctor(t, env, goProject, "--json", "--workspace", goProject, "--language-servers", `{"go": null}`)
	if g := read(out)["gop"]; len(g) != 1 || !strings.Contains(g[0].Note, "turned off") {
		t.Fatalf("turned off: %+v", g)
	}
	text, _, _ := runDoctor(t, env, goProject, "--workspace", goProject)
	if !strings.Contains(text, "lang:  gopls (built-in): "+filepath.Join(bin, "gopls")) {
		t.Fatalf("doctor's text:\n%s", text)
	}
	if _, err := os.Stat(started); err == nil {
		t.Fatal("doctor started the language server")
	}
}
