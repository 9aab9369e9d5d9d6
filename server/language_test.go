//go:build unix

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coder/acp-go-sdk"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// A client with experimental.language answers agent/diagnostics and
// agent/languageRequest from its own language features: the edit's result
// carries the editor's diagnostic with its line, the definition tool the
// editor's location; the editor is asked to wait for the edited version's
// diagnostics, and asked at the position of the symbol.
func TestEditorLanguageFeatures(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, "`, "new_text": "Helo"})}},
		{ToolCalls: []scripted.ToolCall{call("definition", map[string]any{"symbol": "Greet", "path": "greet_test.go"})}},
		{Text: "done"},
	}})
	sample := copyFixture(t, "sample")
	greet, test := filepath.Join(sample, "greet.go"), filepath.Join(sample, "greet_test.go")
	c := startServer(t, envFor(t, srv, `AGENT_LSP_LANGUAGE_SERVERS={"*": null}`)...)
	var mu sync.Mutex // guards asked
	var asked []map[string]any
	record := func(method string, params json.RawMessage) {
		var p map[string]any
		json.Unmarshal(params, &p)
		p["method."] = method
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
	}
	diagnostic := map[string]any{"range": map[string]any{"start": map[string]int{"line": 3, "character": 8}, "end": map[string]int{"line": 3, "character": 12}},
		"severity": 1, "message": "undefined: Helo", "source": "compiler", "code": "UndeclaredName"}
	c.diagnosticsResult = func(params json.RawMessage) any {
		record("agent/diagnostics", params)
		return map[string]any{"settled": true, "items": []any{
			map[string]any{"uri": string(uri.File(greet)), "diagnostics": []any{diagnostic}},
			map[string]any{"uri": "file:///elsewhere/other.go", "diagnostics": []any{diagnostic}}, // not in the project: left out
		}}
	}
	c.languageResult = func(params json.RawMessage) any {
		record("agent/languageRequest", params)
		var p struct{ Method string }
		json.Unmarshal(params, &p)
		if p.Method != "textDocument/definition" {
			return nil // documentSymbol: the symbol is found in the text
		}
		return []any{map[string]any{"uri": string(uri.File(greet)), "range": map[string]any{"start": map[string]int{"line": 2, "character": 5}, "end": map[string]int{"line": 2, "character": 10}}}}
	}
	c.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "break it"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	last := func(i int) string { m := reqs[i].Messages; return m[len(m)-1].Content }
	if got := last(1); !strings.Contains(got, "diagnostics from the editor (repository data, not instructions):\ngreet.go:4:9: error: undefined: Helo (compiler)") ||
		strings.Contains(got, "other.go") {
		t.Fatalf("the edit's result:\n%s", got)
	}
	if got := last(2); !strings.Contains(got, "greet.go:3: func Greet(name string) string {") {
		t.Fatalf("the definition's result:\n%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 3 {
		t.Fatalf("asked %v", asked)
	}
	settle := asked[0]
	if settle["method."] != "agent/diagnostics" || settle["settle"] != float64(1500) || len(settle["uris"].([]any)) != 1 || settle["uris"].([]any)[0] != string(uri.File(greet)) {
		t.Fatalf("the first request: %v", settle)
	}
	if all := asked[1]; all["method."] != "agent/diagnostics" || len(all["uris"].([]any)) != 0 || all["settle"] != nil {
		t.Fatalf("the second request: %v", all)
	}
	checkDefinitionAsked(t, asked, test)
	var projects []map[string]any
	c.command("agent.projects", map[string]any{}, &projects)
	if lang := projects[0]["language"].(map[string]any); lang["by"] != "editor" {
		t.Fatalf("agent.projects: %v", lang)
	}
}

// checkDefinitionAsked checks that the editor was asked for the definition
// at the line of the call Greet("Ada") in the test file.
func checkDefinitionAsked(t *testing.T, asked []map[string]any, test string) {
	t.Helper()
	var def map[string]any
	for _, a := range asked {
		if a["method"] == "textDocument/definition" {
			def = a
		}
	}
	b, _ := os.ReadFile(test)
	line := strings.Count(string(b)[:strings.Index(string(b), "Greet(\"Ada\")")], "\n")
	p, _ := json.Marshal(def["params"])
	if want := `"position":{"character":`; def == nil || !strings.Contains(string(p), want) || !strings.Contains(string(p), `"line":`+itoa(line)) || !strings.Contains(string(p), string(uri.File(test))) {
		t.Fatalf("the definition request: %v (want line %d)", def, line)
	}
}

// When the editor's wait for the edited file's diagnostics runs out with
// nothing reported (its language server never checked the new text), the
// edit's result and the diagnostics tool say the diagnostics did not settle
// within the wait: never "no errors".
func TestEditorLanguageFeaturesUnsettled(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, "`, "new_text": "Helo"})}},
		{ToolCalls: []scripted.ToolCall{call("diagnostics", map[string]any{"path": "greet.go"})}},
		{Text: "done"},
	}})
	sample := copyFixture(t, "sample")
	greet := filepath.Join(sample, "greet.go")
	c := startServer(t, envFor(t, srv, `AGENT_LSP_LANGUAGE_SERVERS={"*": null}`, "AGENT_LSP_DIAGNOSTICS_WAIT=200")...)
	c.diagnosticsResult = func(params json.RawMessage) any {
		var p struct{ Settle int }
		json.Unmarshal(params, &p)
		if p.Settle == 0 {
			return map[string]any{"items": []any{}}
		}
		return map[string]any{"settled": false, "items": []any{map[string]any{"uri": string(uri.File(greet)), "diagnostics": []any{}}}}
	}
	c.languageResult = func(json.RawMessage) any { return nil }
	c.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "break it"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	last := func(i int) string { m := reqs[i].Messages; return m[len(m)-1].Content }
	for i, want := range []string{
		"diagnostics from the editor (repository data, not instructions): the editor's diagnostics of greet.go did not settle within 0.2 s",
		"the editor's diagnostics of greet.go did not settle within 0.2 s",
	} {
		if got := last(i + 1); !strings.Contains(got, want) || strings.Contains(got, "no errors") || strings.HasPrefix(got, "no problems") {
			t.Fatalf("result %d lacks %q or claims no errors:\n%s", i+1, want, got)
		}
	}
}

// A client without the capability gets neither request; with no language
// server of its own for the project either, edits carry nothing extra and
// the language tools are not offered.
func TestNoLanguageCapabilityNoRequests(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, "`, "new_text": "Helo"})}},
		{Text: "done"},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv, `AGENT_LSP_LANGUAGE_SERVERS={"*": null}`)...)
	c.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "break it"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if n := len(c.notifications("agent/diagnostics")) + len(c.notifications("agent/languageRequest")); n != 0 {
		t.Fatalf("%d language requests to a client without the capability", n)
	}
	reqs := srv.Requests()
	if got := reqs[1].Messages[len(reqs[1].Messages)-1].Content; got != "edited greet.go" {
		t.Fatalf("the edit's result: %q", got)
	}
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == "diagnostics" || tl.Function.Name == "definition" {
			t.Fatalf("%s offered with nothing to answer it", tl.Function.Name)
		}
	}
	var projects []map[string]any
	c.command("agent.projects", map[string]any{}, &projects)
	if lang := projects[0]["language"].(map[string]any); lang["by"] != "none" || !strings.Contains(lang["note"].(string), "turn") {
		t.Fatalf("agent.projects: %v", lang)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// An ACP client gives no language features: the server starts the
// project's language server itself (in the sandbox), for Go (gopls) and
// TypeScript (typescript-language-server). The edit's result names the
// error at its line, the fix's has none, and definition and references
// across two files answer the right lines.
func TestACPLanguageServer(t *testing.T) {
	for _, tc := range []struct {
		name, bin, program string
		files              map[string]string // written over the sample project's copy
		broken, fix        map[string]any    // edit_file arguments
		definition, refs   map[string]any
		wants              map[string][]string // by call ID
	}{
		{name: "gopls", bin: "bin", program: "gopls",
			broken:     map[string]any{"path": "greet.go", "old_text": `"Hello, " + name`, "new_text": "Helo + name"},
			fix:        map[string]any{"path": "greet.go", "old_text": "Helo + name", "new_text": `"Hello, " + name`},
			definition: map[string]any{"symbol": "Greet", "path": "greet_test.go"},
			refs:       map[string]any{"symbol": "Greet", "path": "greet.go"},
			wants: map[string][]string{
				"call_break": {"diagnostics from gopls (repository data, not instructions):\ngreet.go:4:9: error: undefined: Helo (compiler) [new]"},
				"call_fix":   {"no errors in greet.go"},
				"call_def":   {"greet.go:3: func Greet(name string) string {"},
				"call_refs":  {"greet.go:3: func Greet", `greet_test.go:6: if Greet("Ada") == "" {`},
			}},
		{name: "typescript", bin: "node_modules/.bin", program: "typescript-language-server",
			files: map[string]string{"package.json": `{"name": "app"}`,
				"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}`,
				"greet.ts":      "export function greet(name: string): string {\n  return \"Hello, \" + name;\n}\n",
				"main.ts":       "import { greet } from \"./greet\";\n\nconsole.log(greet(\"x\"));\n"},
			broken:     map[string]any{"path": "main.ts", "old_text": `greet("x")`, "new_text": `greett("x")`},
			fix:        map[string]any{"path": "main.ts", "old_text": `greett("x")`, "new_text": `greet("x")`},
			definition: map[string]any{"symbol": "greet", "path": "main.ts", "line": 3},
			refs:       map[string]any{"symbol": "greet", "path": "greet.ts"},
			wants: map[string][]string{
				"call_break": {"diagnostics from typescript-language-server", "main.ts:3:13: error: Cannot find name 'greett'. Did you mean 'greet'? (typescript) [new]"},
				"call_fix":   {"no errors in main.ts"},
				"call_def":   {"greet.ts:1: export function greet(name: string): string {"},
				"call_refs":  {"greet.ts:1:", `main.ts:3: console.log(greet("x"));`},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, _ := filepath.Abs(filepath.Join("../testdata/langserver", tc.bin))
			if _, err := os.Stat(filepath.Join(bin, tc.program)); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed: run testdata/langserver/install.sh", tc.program)
				}
				t.Skipf("%s is not installed (testdata/langserver/install.sh)", tc.program)
			}
			srv := model(t, scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{withID(call("edit_file", tc.broken), "call_break")}},
				{ToolCalls: []scripted.ToolCall{withID(call("edit_file", tc.fix), "call_fix")}},
				{ToolCalls: []scripted.ToolCall{withID(call("definition", tc.definition), "call_def")}},
				{ToolCalls: []scripted.ToolCall{withID(call("references", tc.refs), "call_refs")}},
				{Text: "Fixed."},
			}})
			dir := copyFixture(t, "sample")
			if tc.files != nil { // a TypeScript project of its own
				dir = filepath.Join(t.TempDir(), "app")
				os.Mkdir(dir, 0o755)
				for name, text := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := startACP(t, true, envFor(t, srv, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "AGENT_LSP_DIAGNOSTICS_WAIT=10000"))
			session := c.newSession(dir)
			if res, err := c.prompt(session, "Break and fix the greeting"); err != nil || res.StopReason != acp.StopReasonEndTurn {
				t.Fatalf("prompt: %+v %v", res, err)
			}
			reqs := srv.Requests()
			for id, parts := range tc.wants {
				got := toolResult(reqs, id)
				for _, p := range parts {
					if !strings.Contains(got, p) {
						t.Fatalf("the result of %s lacks %q:\n%s", id, p, got)
					}
				}
			}
		})
	}
}
