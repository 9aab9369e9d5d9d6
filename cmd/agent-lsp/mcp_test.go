//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

var (
	mcpBinOnce sync.Once
	mcpBin     string
)

// mcpServerBinary builds testdata/mcp/testserver once.
func mcpServerBinary(t *testing.T) string {
	mcpBinOnce.Do(func() {
		mcpBin = filepath.Join(filepath.Dir(binary), "mcp-testserver")
		if out, err := exec.Command("go", "build", "-o", mcpBin, "../../testdata/mcp/testserver").CombinedOutput(); err != nil {
			t.Fatalf("build the MCP test server: %v\n%s", err, out)
		}
	})
	return mcpBin
}

// Headless runs start a repository's MCP server only when --allow-mcp names
// its definition (NAME@HASH, as agent-lsp mcp hash prints it), and call an
// MCP tool only when --allow names it; a bare name or * no longer starts a
// repository's server, and a repository that redefines an allowed server
// is denied, the message naming the new definition's hash. Servers of a
// --mcp-config file start without asking.
func TestHeadlessMCP(t *testing.T) {
	bin := mcpServerBinary(t)
	turns := func() scripted.Script {
		return scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("mcp__repo__echo", map[string]any{"text": "from the repo server"})}},
			{Text: "done"},
		}}
	}
	define := func(dir string, args ...string) {
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"repo": map[string]any{"command": bin, "args": args}}})
		os.WriteFile(filepath.Join(dir, ".mcp.json"), b, 0o644)
	}
	hashOf := func(t *testing.T, cl *cli) string {
		out, errOut, code := cl.run(t, "", "mcp", "hash", "--workspace", cl.workspace, "repo")
		ref, _, _ := strings.Cut(out, "\t")
		if code != 0 || !strings.HasPrefix(ref, "repo@") || len(ref) != len("repo@")+64 || !strings.Contains(out, "\tproject\t"+bin) {
			t.Fatalf("mcp hash: exit %d: %q %s", code, out, errOut)
		}
		return ref
	}
	cases := []struct {
		name, want string
		args       func(ref string) []string
		redefine   bool   // the repository changes the definition after it was hashed
		stderr     string // what the run says on stderr; "<ref>" is the definition's NAME@HASH
		asked      bool   // the tool was listed to the model
	}{
		{"not allowed to start", `unknown tool "mcp__repo__echo"`, func(string) []string { return nil }, false, "--allow-mcp <ref>", false},
		{"a bare name", `unknown tool "mcp__repo__echo"`, func(string) []string { return []string{"--allow-mcp", "repo"} }, false,
			"a bare --allow-mcp repo, or *, approves only your own servers", false},
		{"*", `unknown tool "mcp__repo__echo"`, func(string) []string { return []string{"--allow-mcp", "*"} }, false, "--allow-mcp <ref>", false},
		{"started by its hash, call not allowed", "allow it with --allow mcp__repo__echo", func(ref string) []string { return []string{"--allow-mcp", ref} }, false, "", true},
		{"started and allowed", "from the repo server", func(ref string) []string { return []string{"--allow-mcp", ref, "--allow", "mcp__repo__*"} }, false, "", true},
		{"redefined by the repository", `unknown tool "mcp__repo__echo"`, func(ref string) []string { return []string{"--allow-mcp", ref, "--allow", "mcp__repo__*"} }, true,
			"--allow-mcp <ref>", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newCLI(t)
			cl.srv.SetScript(turns())
			define(cl.workspace)
			ref := hashOf(t, cl)
			if c.redefine {
				define(cl.workspace, "--now-something-else")
				ref2 := hashOf(t, cl)
				if ref2 == ref {
					t.Fatal("a changed definition kept its hash")
				}
				c.stderr = strings.ReplaceAll(c.stderr, "<ref>", ref2) // the denial names the new definition
			}
			args := append([]string{"run", "--no-daemon", "--workspace", cl.workspace}, c.args(ref)...)
			out, errOut, code := cl.run(t, "", append(args, "use the repo's tool")...)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if want := strings.ReplaceAll(c.stderr, "<ref>", ref); !strings.Contains(errOut, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errOut)
			}
			reqs := cl.srv.Requests()
			listed := false
			for _, tl := range reqs[0].Tools {
				listed = listed || tl.Function.Name == "mcp__repo__echo"
			}
			if listed != c.asked {
				t.Fatalf("listed %v, want %v", listed, c.asked)
			}
			if tm := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(tm, c.want) {
				t.Fatalf("tool result %q, want %q", tm, c.want)
			}
		})
	}

	t.Run("a --mcp-config file", func(t *testing.T) {
		cl := newCLI(t)
		cl.srv.SetScript(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("mcp__mine__echo", map[string]any{"text": "from my server"})}},
			{Text: "done"},
		}})
		cfg := filepath.Join(t.TempDir(), "mcp.json")
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"mine": map[string]any{"command": bin}}})
		os.WriteFile(cfg, b, 0o644)
		_, errOut, code := cl.run(t, "", "run", "--no-daemon", "--workspace", cl.workspace, "--mcp-config", cfg, "--allow", "mcp__mine__echo", "echo")
		reqs := cl.srv.Requests()
		if code != 0 || len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "from my server") {
			t.Fatalf("exit %d %s: %+v", code, errOut, reqs)
		}
	})
}

// doctor lists the MCP servers each project's runs may use, says which need
// approval, and starts none of them.
func TestDoctorListsMCPServers(t *testing.T) {
	cl := newCLI(t)
	marker := filepath.Join(t.TempDir(), "started")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"repo": map[string]any{"command": "touch", "args": []string{marker}}}})
	os.WriteFile(filepath.Join(cl.workspace, ".mcp.json"), b, 0o644)
	out, errOut, _ := cl.run(t, "", "doctor", "--json", "--workspace", cl.workspace)
	var rep struct {
		Projects []struct {
			MCP []struct{ Name, Source, Approval, Command string } `json:"mcp"`
		} `json:"projects"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Projects) != 1 || len(rep.Projects[0].MCP) != 1 {
		t.Fatalf("%v: %s %s", err, out, errOut)
	}
	m := rep.Projects[0].MCP[0]
	if m.Name != "repo" || m.Source != "project" || m.Approval != "needed" || !strings.Contains(m.Command, "touch") {
		t.Fatalf("%+v", m)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("doctor started a repository's MCP server")
	}
}

// processesOf counts the live processes running path.
func processesOf(path string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), path) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue
		}
		n++
	}
	return n
}

// Windows of one daemon whose MCP servers are defined and run alike share
// the servers' processes; a window whose environment differs gets its own.
func TestDaemonSharesMCPServers(t *testing.T) {
	bin := mcpServerBinary(t)
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{{Match: "echo", ByHistory: true, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("mcp__tools__echo", map[string]any{"text": "shared"}), "call_echo")}}, {Text: "done"},
	}}}})
	opts := map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": bin, "sandbox": false}},
		"permissions": map[string]any{"allow": []string{"mcp__tools__*"}}}
	open := func(extra ...string) *window {
		w := startWindow(t, "", daemonEnv(store, srv, extra...))
		if err := w.call("initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}, "initializationOptions": opts,
			"workspaceFolders": []map[string]string{{"uri": "file://" + ws, "name": "sample"}}}, nil); err != nil {
			t.Fatal(err)
		}
		var r result
		if err := w.command("agent.run", map[string]any{"prompt": "echo"}, &r); err != nil || r.Status != "done" {
			t.Fatalf("%+v %v", r, err)
		}
		return w
	}
	a := open()
	b := open()
	if n := processesOf(bin); n != 1 {
		t.Fatalf("%d server processes for two windows defined alike, want 1", n)
	}
	c := open("SOMETHING_ELSE=1")
	if n := processesOf(bin); n != 2 {
		t.Fatalf("%d server processes with a third window of another environment, want 2", n)
	}
	for _, w := range []*window{a, b, c} {
		w.close()
	}
	eventually(t, "the servers to stop with their windows", func() bool { return processesOf(bin) == 0 })
}
