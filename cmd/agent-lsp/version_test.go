//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/server"
)

// versionFile is the one place the version is set: the server, the VS Code
// extension and the Neovim plugin carry it.
const versionFile = "../../VERSION"

// versionLdflag stamps a build with a version, as the packaging scripts do
// (editors/vscode/scripts/package-platform.mjs).
const versionLdflag = "-X github.com/agent-lsp/agent-lsp/server.Version="

// readVersion returns VERSION's version, checked to be a plain semantic
// version (what VS Code's marketplace and the daemon's newer-wins rule take).
func readVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(versionFile)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, not MAJOR.MINOR.PATCH", v)
	}
	return v
}

// TestVersion: the server's default version (what go install builds), the VS
// Code extension's package.json and the Neovim plugin's version.lua all say
// VERSION, and the binary prints it for --version and version.
func TestVersion(t *testing.T) {
	want := readVersion(t)
	if server.Version != want {
		t.Errorf("server.Version (server/server.go) is %q, VERSION %q: change it with VERSION", server.Version, want)
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile("../../editors/vscode/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != want {
		t.Errorf("editors/vscode/package.json's version is %q, VERSION %q", pkg.Version, want)
	}
	var lock struct {
		Version  string
		Packages map[string]struct{ Version string }
	}
	if b, err = os.ReadFile("../../editors/vscode/package-lock.json"); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if lock.Version != want || lock.Packages[""].Version != want {
		t.Errorf("editors/vscode/package-lock.json's version is %q (root package %q), VERSION %q", lock.Version, lock.Packages[""].Version, want)
	}
	b, err = os.ReadFile("../../editors/neovim/lua/agent_lsp/version.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^return "([^"]*)"$`).FindSubmatch(b)
	if m == nil || string(m[1]) != want {
		t.Errorf("editors/neovim/lua/agent_lsp/version.lua returns %q, VERSION %q", m, want)
	}
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(binary, arg).Output()
		if err != nil {
			t.Fatalf("agent-lsp %s: %v", arg, err)
		}
		if !strings.HasPrefix(string(out), "agent-lsp "+want+" (") {
			t.Errorf("agent-lsp %s printed %q, want agent-lsp %s (...)", arg, out, want)
		}
	}
}

// TestVersionStamped: a build stamped as the packaging scripts stamp it
// prints the stamped version, in --version and doctor alike (the initialize
// response's serverInfo and the daemon's handshake read the same variable).
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "agent-lsp")
	if out, err := exec.Command("go", "build", "-ldflags", versionLdflag+"9.8.7", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "agent-lsp 9.8.7 (") {
		t.Errorf("stamped agent-lsp --version printed %q (%v), want agent-lsp 9.8.7 (...)", out, err)
	}
	cmd := exec.Command(bin, "doctor", "--json", "--store", filepath.Join(t.TempDir(), "s.db"), "--base-url", "http://127.0.0.1:1/v1")
	cmd.Env = append(os.Environ(), "AGENT_LSP_DAEMON=off")
	out, _ = cmd.Output() // exit 1: the endpoint is unreachable
	var d struct{ Version string }
	if err := json.Unmarshal(out, &d); err != nil || d.Version != "9.8.7" {
		t.Errorf("stamped agent-lsp doctor --json: version %q (%v) in %s", d.Version, err, out)
	}
}
