package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// winRoot is an absolute path under which the token's tests put projects:
// a drive on Windows, / elsewhere (the rules are made with this platform's
// paths, as the helper makes them on Windows).
func winRoot(elem ...string) string {
	base := "/home/me/src"
	if runtime.GOOS == "windows" {
		base = `C:\Users\me\src`
	}
	return filepath.Join(append([]string{base}, elem...)...)
}

// scratchDir is a temporary directory removed after t, its removal's
// failure ignored (Wine 8 removes no directory: t.TempDir would fail a
// skipped test there).
func scratchDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "agent-lsp-token-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func tokenOpts(root string) *opts {
	return &opts{
		stage: stageJob, token: true, root: root,
		write: []string{winRoot("..", "AppData", "Local", "Temp"), root, winRoot("..", "go", "pkg", "mod")},
		ro:    []string{".git", ".vscode", "sub/.git"},
		roAbs: []string{winRoot("main", ".git", "worktrees", "p")},
		pin:   []string{"sub"},
		links: []string{"linked/.git"},
		argv:  []string{"cmd", "/c", "go test ./..."},
	}
}

// TestTokenSID: one SID per project, in the form of a capability SID
// derived from a name, the same for the same path whatever its case, and
// another for another project.
func TestTokenSID(t *testing.T) {
	a, b := tokenSID(winRoot("a")), tokenSID(winRoot("b"))
	form := regexp.MustCompile(`^S-1-15-3-1024(-[0-9]{1,10}){8}$`)
	if !form.MatchString(a) || !form.MatchString(b) {
		t.Fatalf("not SIDs: %q %q", a, b)
	}
	if a == b {
		t.Errorf("two projects share the SID %s", a)
	}
	if tokenSID(strings.ToUpper(winRoot("a"))) != a || tokenSID(winRoot("a")+string(filepath.Separator)) != a {
		t.Errorf("the same project named otherwise got another SID")
	}
}

// TestTokenRules: the ACEs of a command's policy: denies first, each .git
// and protected path (and a worktree's repository outside the project)
// denied writes, deletes and ACL changes, inherited; a protected link
// denied as itself; the directories above protected paths pinned; each
// writable directory granted, inherited, without FILE_DELETE_CHILD,
// WRITE_DAC or WRITE_OWNER.
func TestTokenRules(t *testing.T) {
	root := winRoot("p")
	sid := tokenSID(root)
	var got []string
	for _, r := range tokenRules(tokenOpts(root)) {
		got = append(got, r.Path+" "+r.SDDL(sid))
	}
	want := []string{
		filepath.Join(root, ".git") + " (D;OICI;0xd0156;;;" + sid + ")",
		filepath.Join(root, ".vscode") + " (D;OICI;0xd0156;;;" + sid + ")",
		filepath.Join(root, "sub", ".git") + " (D;OICI;0xd0156;;;" + sid + ")",
		filepath.Join(root, "linked", ".git") + " (D;;0xd0156;;;" + sid + ")",
		winRoot("main", ".git", "worktrees", "p") + " (D;OICI;0xd0156;;;" + sid + ")",
		filepath.Join(root, "sub") + " (D;;0x10000;;;" + sid + ")",
		winRoot("..", "AppData", "Local", "Temp") + " (A;OICI;0x1301bf;;;" + sid + ")",
		root + " (A;OICI;0x1301bf;;;" + sid + ")",
		winRoot("..", "go", "pkg", "mod") + " (A;OICI;0x1301bf;;;" + sid + ")",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if grantMask&(fileDeleteChild|rightWriteDAC|rightWriteOwner) != 0 || denyMask&fileReadData != 0 {
		t.Errorf("grant %#x, deny %#x", grantMask, denyMask)
	}
}

// TestTokenRulesRefuse: what would grant too much or deny nothing is left
// out: a relative, empty or whole-disk writable directory; a protected
// path that leaves the project or is the project itself; duplicates.
func TestTokenRulesRefuse(t *testing.T) {
	root := winRoot("p")
	disk := string(filepath.Separator)
	if runtime.GOOS == "windows" {
		disk = `C:\`
	}
	o := &opts{root: root, write: []string{"", "rel", disk, root, root + string(filepath.Separator)},
		ro: []string{"../other/.git", "..", ".", "", "a/../../x"}, pin: []string{"../up"}, roAbs: []string{"relative/.git"}}
	rules := tokenRules(o)
	if len(rules) != 1 || rules[0].Path != root || rules[0].Deny {
		t.Errorf("rules %+v, want one grant on %s", rules, root)
	}
}

// hostileTokenPaths are the project names of
// testdata/hostile/windows-token-paths.json.
func hostileTokenPaths(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "windows-token-paths.json"))
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
	return names
}

// TestTokenHostilePaths: a project path with spaces, quotes, `..`,
// semicolons, SDDL's own punctuation or a `%VAR%` (testdata/hostile/
// windows-token-paths.json) gives the ACEs of a plain path (no path is
// ever part of an ACE), each path whole and inside the project it names,
// and reaches the helper whole through its command line.
func TestTokenHostilePaths(t *testing.T) {
	plainRoot := winRoot("plain")
	var plain []string
	for _, r := range tokenRules(tokenOpts(plainRoot)) {
		plain = append(plain, r.SDDL("SID"))
	}
	for _, name := range hostileTokenPaths(t) {
		root := filepath.Clean(winRoot(name))
		o := tokenOpts(root)
		rules := tokenRules(o)
		var aces []string
		for _, r := range rules {
			aces = append(aces, r.SDDL("SID"))
			if r.Path != filepath.Clean(r.Path) {
				t.Errorf("%q: a rule's path is not clean: %q", name, r.Path)
			}
			if _, in := inside(root, r.Path); r.Deny && !in && r.Path != winRoot("main", ".git", "worktrees", "p") {
				t.Errorf("%q: a deny outside the project: %q", name, r.Path)
			}
		}
		if !slices.Equal(aces, plain) {
			t.Errorf("%q changed the ACEs:\n%s", name, strings.Join(aces, "\n"))
		}
		back, err := parseOpts(o.commandLine("agent-lsp")[2:])
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if !slices.Equal(tokenRules(back), rules) || !back.token || !slices.Equal(back.argv, o.argv) {
			t.Errorf("%q: the helper's options did not survive its command line: %+v", name, back)
		}
	}
}

// TestTokenWiring: where Windows enforces the token, commands run under it
// in their Job Object, with the project's .git (a directory, a file, and a
// nested repository) and protected paths denied; they are confined only
// when the project's network is allowed (Windows cannot turn it off), and
// the report says so.
func TestTokenWiring(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "sub/.git", ".vscode", "wt"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	main := t.TempDir()
	os.MkdirAll(filepath.Join(main, ".git", "worktrees", "wt"), 0o755)
	os.WriteFile(filepath.Join(root, "wt", ".git"), []byte("gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n"), 0o644)
	s := &Sandbox{token: true, helper: "agent-lsp"}
	off := Policy{Mode: WorkspaceWrite, Root: root, Temp: t.TempDir()}
	on := off
	on.Network = true
	if s.Isolation(off) != RestrictedToken || s.Confines(off) || !s.Holds(off) || !s.Confines(on) || s.Unconfined() != "" {
		t.Fatalf("isolation %s, confines %v/%v, holds %v, unconfined %q", s.Isolation(off), s.Confines(off), s.Confines(on), s.Holds(off), s.Unconfined())
	}
	if s.Isolation(Policy{Mode: Off}) != None {
		t.Errorf("the sandbox off still gets a token")
	}
	cmd, run := s.Command(context.Background(), off, []string{"cmd", "/c", "dir"})
	o, err := parseOpts(cmd.Args[2:])
	if err != nil {
		t.Fatal(err)
	}
	if o.stage != stageJob || !o.token {
		t.Errorf("stage %s token %v", o.stage, o.token)
	}
	rules := tokenRules(o)
	for _, p := range []string{".git", "sub/.git", ".vscode", "wt/.git"} {
		if !slices.ContainsFunc(rules, func(r aclRule) bool { return r.Deny && r.Path == filepath.Join(root, filepath.FromSlash(p)) }) ||
			!slices.Contains(run.ReadOnly(), p) {
			t.Errorf("%s is not denied: %+v", p, rules)
		}
	}
	if !slices.ContainsFunc(rules, func(r aclRule) bool { return r.Deny && r.Path == filepath.Join(main, ".git", "worktrees", "wt") }) {
		t.Errorf("the worktree's repository is not denied: %+v", rules)
	}
	run.Finish()
	if argv := s.Argv(on, "server", "--stdio"); !slices.Contains(argv, "--token") || slices.Contains(argv, string(stageSpawn)) {
		t.Errorf("Argv: %q", argv)
	}
	r := s.Describe(off)
	if r.Isolation != RestrictedToken || !r.Network || len(r.Enforced) == 0 || !strings.Contains(r.Processes, "Job Object") ||
		!slices.ContainsFunc(r.NotEnforced, func(l string) bool { return strings.Contains(l, "network") && strings.Contains(l, "ask") }) {
		t.Errorf("report %+v", r)
	}
	if r := s.Describe(on); slices.ContainsFunc(r.NotEnforced, func(l string) bool { return strings.HasPrefix(l, "network") }) {
		t.Errorf("network allowed, yet reported as not confined: %+v", r.NotEnforced)
	}
}

// TestTokenFallback: where the token could not be made, nothing is
// confined, every command asks, and the reason is said.
func TestTokenFallback(t *testing.T) {
	s := &Sandbox{noToken: errors.New("a restricted token did not confine a probe's writes"), helper: "agent-lsp"}
	p := Policy{Mode: WorkspaceWrite, Root: t.TempDir(), Network: true}
	if s.Isolation(p) != None || s.Confines(p) || !strings.Contains(s.Unconfined(), "did not confine a probe's writes") {
		t.Errorf("isolation %s, confines %v, unconfined %q", s.Isolation(p), s.Confines(p), s.Unconfined())
	}
}

// TestTokenLinkedGit: a .git that is a symlink (or, on Windows, a
// junction: Go reports it irregular) is denied as itself, and what it
// points at is denied too.
func TestTokenLinkedGit(t *testing.T) {
	if !linkLike(fs.ModeIrregular) || linkLike(fs.ModeIrregular|fs.ModeDir) || !linkLike(fs.ModeSymlink) || linkLike(fs.ModeDir) {
		t.Errorf("linkLike: a junction is not taken for a link, or a directory is")
	}
	root, elsewhere := scratchDir(t), scratchDir(t)
	if err := os.Symlink(elsewhere, filepath.Join(root, ".git")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Skip("os.Symlink made no symlink (Wine)")
	}
	s := &Sandbox{token: true, helper: "agent-lsp"}
	cmd, run := s.Command(context.Background(), Policy{Mode: WorkspaceWrite, Root: root, Temp: scratchDir(t)}, []string{"x"})
	defer run.Finish()
	o, err := parseOpts(cmd.Args[2:])
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(elsewhere)
	rules := tokenRules(o)
	self := slices.ContainsFunc(rules, func(r aclRule) bool { return r.Deny && !r.Inherit && r.Path == filepath.Join(root, ".git") })
	target := slices.ContainsFunc(rules, func(r aclRule) bool { return r.Deny && r.Inherit && r.Path == real })
	if !self || !target {
		t.Errorf("the link denied %v, its target %v: %+v", self, target, rules)
	}
}
