//go:build unix

package sandbox

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// macResolve plays macOS's links: /tmp, /var and /etc lead to /private.
func macResolve(p string) string {
	for _, l := range []string{"/tmp", "/var", "/etc"} {
		if p == l || strings.HasPrefix(p, l+"/") {
			return "/private" + p
		}
	}
	return p
}

// seatbeltOpts are the helper's options for a project with a nested
// repository, a worktree's repository outside it and protected files.
func seatbeltOpts(root string, network bool) *opts {
	return &opts{
		stage: stageSeatbelt, root: root, network: network,
		write: []string{"/var/folders/xy/T", root, "/Users/me/go/pkg/mod", "/Users/me/.cache/agent-lsp/sandbox-go-build/0123456789abcdef"},
		ro:    []string{".git", ".vscode", "AGENTS.md", "sub/.git", "sub/deeper/.env"},
		roAbs: []string{"/Users/me/repos/main/.git/worktrees/p"},
		pin:   []string{"sub", "sub/deeper"},
		argv:  []string{"sh", "-c", "go test ./..."},
	}
}

// TestSeatbeltProfileGolden keeps the profile and sandbox-exec's command
// line (testdata/seatbelt-*.golden; -update rewrites them), network off and
// on, so that every change of what macOS enforces is seen in review.
func TestSeatbeltProfileGolden(t *testing.T) {
	for _, network := range []bool{false, true} {
		name := map[bool]string{false: "seatbelt-offline.golden", true: "seatbelt-network.golden"}[network]
		t.Run(name, func(t *testing.T) {
			args := seatbeltArgs(seatbeltSpecFor(seatbeltOpts("/Users/me/src/p", network), "/var/folders/xy/T/agent-lsp-command-1", macResolve), []string{"sh", "-c", "go test ./..."})
			if args[0] != "-p" {
				t.Fatalf("args start %q, want -p PROFILE", args[0])
			}
			got := args[1] + "\n; sandbox-exec's arguments after the profile:\n" + strings.Join(args[2:], "\n") + "\n"
			golden(t, filepath.Join("testdata", name), got)
			checkSExpressions(t, args[1])
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking the change):\n%s", path, got)
	}
}

// TestSeatbeltProfileRules checks what the golden file holds, rule by rule:
// what a reviewer should not have to find by reading it.
func TestSeatbeltProfileRules(t *testing.T) {
	sp := seatbeltSpecFor(seatbeltOpts("/Users/me/src/p", false), "/var/folders/xy/T/agent-lsp-command-1", macResolve)
	params := map[string]string{}
	args := seatbeltArgs(sp, []string{"true"})
	for i := 2; i < len(args)-1; i += 2 {
		if args[i] != "-D" {
			t.Fatalf("argument %d is %q, want -D", i, args[i])
		}
		k, v, _ := strings.Cut(args[i+1], "=")
		params[k] = v
	}
	has := func(kind, path string) {
		t.Helper()
		for k, v := range params {
			if strings.HasPrefix(k, kind) && v == path {
				return
			}
		}
		t.Errorf("no %s parameter for %s: %v", kind, path, params)
	}
	for _, p := range []string{"/Users/me/src/p", "/var/folders/xy/T", "/private/var/folders/xy/T", "/tmp", "/private/tmp", "/private/var/tmp"} {
		has("W", p)
	}
	for _, p := range []string{"/Users/me/src/p/.git", "/Users/me/src/p/sub/.git", "/Users/me/src/p/.vscode", "/Users/me/src/p/AGENTS.md",
		"/Users/me/src/p/sub/deeper/.env", "/Users/me/repos/main/.git/worktrees/p"} {
		has("R", p)
	}
	has("P", "/Users/me/src/p/sub")
	has("S", "/Users/me/src/p")
	has("S", "/var/folders/xy/T/agent-lsp-command-1")
	has("W", "/var/folders/xy/T/agent-lsp-command-1")
	for k, v := range params {
		// The user's tmux, ssh-agent and editor listen there.
		if strings.HasPrefix(k, "S") && (strings.HasSuffix(v, "/tmp") || strings.HasSuffix(v, "/T")) {
			t.Errorf("Unix sockets allowed in %s", v)
		}
	}
	has("P", "/Users/me/src/p/sub/deeper")
	prof := args[1]
	for _, want := range []string{"(deny default)", "(allow process-exec)", "(require-not (subpath (param \"R5\")))", "(require-not (literal (param \"P1\")))"} {
		if !strings.Contains(prof, want) {
			t.Errorf("the profile lacks %s", want)
		}
	}
	if strings.Contains(prof, "network*") || strings.Contains(prof, " ip ") || strings.Contains(prof, "(allow default)") || strings.Contains(prof, "(allow system-socket)") {
		t.Errorf("network off, yet the profile allows IP or everything:\n%s", prof)
	}
	if on := seatbeltProfile(seatbeltSpecFor(seatbeltOpts("/Users/me/src/p", true), "", macResolve)); !strings.Contains(on, `(allow network-outbound (remote ip "*:*"))`) || strings.Contains(on, "network*") || !strings.Contains(on, `(remote unix-socket (subpath (param "S0")))`) {
		t.Errorf("network on, yet the profile does not allow it:\n%s", on)
	}
	// Read-only mode: only the temporary directories are writable.
	ro := seatbeltOpts("/Users/me/src/p", false)
	ro.write, ro.ro, ro.roAbs, ro.pin = []string{"/var/folders/xy/T"}, nil, nil, nil
	sp = seatbeltSpecFor(ro, "", macResolve)
	if want := []string{"/private/tmp", "/private/var/folders/xy/T", "/private/var/tmp", "/tmp", "/var/folders/xy/T", "/var/tmp"}; !slices.Equal(sp.Write, want) {
		t.Errorf("read-only mode writes %v, want %v", sp.Write, want)
	}
}

// TestSeatbeltHostilePaths: project paths that would break out of an SBPL
// string (testdata/hostile/seatbelt-paths.json) leave the profile as it is
// for a plain path, and reach sandbox-exec whole, as parameters.
func TestSeatbeltHostilePaths(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "seatbelt-paths.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		t.Fatal(err)
	}
	if len(names) < 5 {
		t.Fatalf("only %d hostile names", len(names))
	}
	plain := seatbeltArgs(seatbeltSpecFor(seatbeltOpts("/Users/me/src/plain", false), "", macResolve), []string{"true"})
	for _, name := range names {
		root := "/Users/me/src/" + name
		o := seatbeltOpts(root, false)
		o.ro = append(o.ro, name+"/.git") // a nested repository named the same
		o.pin = append(o.pin, name)
		plainO := seatbeltOpts("/Users/me/src/plain", false)
		plainO.ro, plainO.pin = append(plainO.ro, "plain/.git"), append(plainO.pin, "plain")
		want := seatbeltProfile(seatbeltSpecFor(plainO, "", macResolve))
		args := seatbeltArgs(seatbeltSpecFor(o, "", macResolve), []string{"true"})
		if args[1] != want {
			t.Errorf("the path %q changed the profile:\n%s", root, args[1])
		}
		for _, p := range []string{root, filepath.Join(root, ".git"), filepath.Join(root, name, ".git"), filepath.Join(root, name)} {
			found := false
			for i := 2; i < len(args)-1; i++ {
				if _, v, _ := strings.Cut(args[i], "="); args[i-1] == "-D" && v == p {
					found = true
				}
			}
			if !found {
				t.Errorf("no -D parameter holds %q whole: %q", p, args[2:])
			}
		}
	}
	checkSExpressions(t, plain[1])
}

// checkSExpressions fails unless prof is a sequence of balanced
// s-expressions whose strings and regexes are closed: what sandbox-exec's
// reader needs before anything else (it cannot run here).
func checkSExpressions(t *testing.T, prof string) {
	t.Helper()
	depth, line := 0, 1
	for i := 0; i < len(prof); i++ {
		switch c := prof[i]; {
		case c == '\n':
			line++
		case c == ';' && depth >= 0:
			for i < len(prof) && prof[i] != '\n' {
				i++
			}
			line++
		case c == '"' || (c == '#' && i+1 < len(prof) && prof[i+1] == '"'):
			if c == '#' {
				i++
			}
			j := strings.IndexByte(prof[i+1:], '"')
			if j < 0 || strings.ContainsAny(prof[i+1:i+1+j], "\n\\") {
				t.Fatalf("line %d: a string is not closed on its line (or escapes)", line)
			}
			i += j + 1
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				t.Fatalf("line %d: ) closes nothing", line)
			}
		}
	}
	if depth != 0 {
		t.Fatalf("%d ( left open", depth)
	}
	if !strings.HasPrefix(prof, "(version 1)\n") {
		t.Fatal("the profile does not start with (version 1)")
	}
}

// TestSeatbeltSpecResolvesLinks: a writable directory reached through a
// link is allowed by its real path too (the kernel checks that one), a
// directory not made yet by its nearest existing parent's, and a relative
// path is never allowed.
func TestSeatbeltSpecResolvesLinks(t *testing.T) {
	o := &opts{root: "/p", write: []string{"/tmp/x", "relative", "", "/p/"}, ro: []string{".git"}}
	sp := seatbeltSpecFor(o, "", macResolve)
	want := []string{"/p", "/private/tmp", "/private/tmp/x", "/private/var/tmp", "/tmp", "/tmp/x", "/var/tmp"}
	if !slices.Equal(sp.Write, want) {
		t.Errorf("writable %v, want %v", sp.Write, want)
	}
	if !slices.Equal(sp.ReadOnly, []string{"/p/.git"}) {
		t.Errorf("read-only %v", sp.ReadOnly)
	}
}

// TestSeatbeltWiring: with Seatbelt found, commands are confined by it: the
// helper runs its seatbelt stage with every .git and protected path of the
// project read-only, a command line for MCP servers goes straight to it,
// and Describe says what it enforces.
func TestSeatbeltWiring(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "sub/.git", ".vscode"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("x"), 0o644)
	s := &Sandbox{seatbelt: seatbeltExec, helper: "/agent-lsp"}
	p := Policy{Mode: WorkspaceWrite, Root: root, Temp: t.TempDir()}
	if !s.Confines(p) || s.Isolation(p) != Seatbelt || s.Unconfined() != "" {
		t.Fatalf("confines %v, isolation %s, unconfined %q", s.Confines(p), s.Isolation(p), s.Unconfined())
	}
	cmd, run := s.Command(context.Background(), p, []string{"sh", "-c", "true"})
	o, err := parseOpts(cmd.Args[2:])
	if err != nil {
		t.Fatal(err)
	}
	if o.stage != stageSeatbelt || !slices.Equal(o.argv, []string{"sh", "-c", "true"}) {
		t.Errorf("stage %s argv %q", o.stage, o.argv)
	}
	for _, rel := range []string{".git", "sub/.git", ".vscode", "AGENTS.md"} {
		if !slices.Contains(o.ro, rel) || !slices.Contains(run.ReadOnly(), rel) {
			t.Errorf("%s is not read-only: %v", rel, o.ro)
		}
	}
	if !slices.Contains(o.pin, "sub") {
		t.Errorf("sub is not pinned: %v", o.pin)
	}
	run.Finish()
	if argv := s.Argv(p, "server", "--stdio"); !slices.Contains(argv, string(stageSeatbelt)) || slices.Contains(argv, string(stageSpawn)) {
		t.Errorf("MCP command line %q", argv)
	}
	r := s.Describe(p)
	if r.Isolation != Seatbelt || r.Network || len(r.Enforced) == 0 || !strings.Contains(strings.Join(r.Enforced, "\n"), "Seatbelt") {
		t.Errorf("report %+v", r)
	}
	if off := (Policy{Mode: Off, Root: root}); s.Confines(off) || s.Isolation(off) != None {
		t.Error("the sandbox is off, yet Seatbelt confines")
	}
}
