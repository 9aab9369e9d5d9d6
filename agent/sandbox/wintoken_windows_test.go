package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// isWine reports whether the tests run under Wine.
func isWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// explicitACEs counts the explicit ACEs of path's DACL for sid, by kind.
func explicitACEs(t *testing.T, path string, sid *windows.SID) (allowed, denied int) {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		t.Fatalf("no DACL on %s: %v", path, err)
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			t.Fatal(err)
		}
		if ace.Header.AceFlags&windows.INHERITED_ACE != 0 || !(*windows.SID)(unsafe.Pointer(&ace.SidStart)).Equals(sid) {
			continue
		}
		switch ace.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE:
			allowed++
		case windows.ACCESS_DENIED_ACE_TYPE:
			denied++
		}
	}
	return allowed, denied
}

// TestApplyRulesOnce: the rules' ACEs land on their paths for the
// project's SID, once however often a command runs; a deny on a path that
// is not there is skipped.
func TestApplyRulesOnce(t *testing.T) {
	root := scratchDir(t)
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sid, err := windows.StringToSid(tokenSID(root))
	if err != nil {
		t.Fatal(err)
	}
	o := &opts{root: root, write: []string{root}, ro: []string{".git", "missing/.env"}}
	for range 2 {
		err := applyRules(tokenRules(o), sid)
		if isWine() {
			// Wine 8 accepts SetSecurityInfo on a file and keeps nothing:
			// applyRules must say so rather than confine nothing.
			if err == nil || !strings.Contains(err.Error(), "kept no ACE") {
				t.Fatalf("Wine kept no ACE, yet applyRules said %v", err)
			}
			t.Skipf("Wine keeps no file ACL: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, d := explicitACEs(t, root, sid); a != 1 || d != 0 {
		t.Errorf("the project: %d grants, %d denies for its SID; want 1, 0", a, d)
	}
	if a, d := explicitACEs(t, filepath.Join(root, ".git"), sid); a != 0 || d != 1 {
		t.Errorf(".git: %d grants, %d denies for the SID; want 0, 1", a, d)
	}
}

// TestRestrictedTokenMade: the token is made and carries the project's
// SID among its restricting SIDs.
func TestRestrictedTokenMade(t *testing.T) {
	sid, err := windows.StringToSid(tokenSID(scratchDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := restrictedToken(sid)
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	var n uint32
	windows.GetTokenInformation(tok, windows.TokenRestrictedSids, nil, 0, &n)
	if n == 0 && isWine() {
		t.Skip("Wine 8's CreateRestrictedToken makes a token without restricting SIDs")
	}
	if n == 0 {
		t.Fatal("the token has no restricting SIDs")
	}
	buf := make([]byte, n)
	if err := windows.GetTokenInformation(tok, windows.TokenRestrictedSids, &buf[0], n, &n); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range (*windows.Tokengroups)(unsafe.Pointer(&buf[0])).AllGroups() {
		found = found || g.Sid.Equals(sid)
	}
	if !found {
		t.Error("the project's SID is not a restricting SID of the token")
	}
}

// TestTokenConfinesWrites: where Windows enforces the token (the probe at
// New passed), a command writes in the project and its temporary
// directory, and neither in .git nor outside them. Wine 8 enforces no
// restricted token: the probe fails there, and this test says why.
func TestTokenConfinesWrites(t *testing.T) {
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	if !s.token {
		t.Skipf("writes are not confined here: %v", s.noToken)
	}
	root, temp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	p := Policy{Mode: WorkspaceWrite, Root: root, Temp: temp, Network: true}
	want := map[string]string{
		filepath.Join(root, "ok"):          "wrote",
		filepath.Join(temp, "ok"):          "wrote",
		filepath.Join(root, ".git", "bad"): "denied",
		filepath.Join(outside, "bad"):      "denied",
	}
	var list []string
	for p := range want {
		list = append(list, p)
	}
	cmd, run := s.Command(context.Background(), p, []string{os.Args[0]})
	cmd.Dir = root
	cmd.Env = append(os.Environ(), jobRoleEnv+"=write", "AGENT_LSP_JOB_TEST_WRITE="+strings.Join(list, string(os.PathListSeparator)))
	out, err := cmd.CombinedOutput()
	run.Finish()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for p, w := range want {
		if !strings.Contains(string(out), w+" "+p) {
			t.Errorf("%s: want %s:\n%s", p, w, out)
		}
	}
}

// TestHelperArgsSurviveWindows: the helper's options for hostile project
// paths (testdata/hostile/windows-token-paths.json) reach a process
// started by Windows whole: Go quotes each argument for CreateProcess and
// the child's runtime splits them back (no command line of ours).
func TestHelperArgsSurviveWindows(t *testing.T) {
	for _, name := range hostileTokenPaths(t) {
		o := tokenOpts(filepath.Clean(winRoot(name)))
		want := o.commandLine("agent-lsp")[2:] // without the helper's mark, which would make the child the helper
		cmd := exec.Command(os.Args[0], want...)
		cmd.Env = append(os.Environ(), jobRoleEnv+"=args")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		var got []string
		if err := json.Unmarshal(out, &got); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: the child got %q (%v), want %q", name, got, err, want)
		}
	}
}
