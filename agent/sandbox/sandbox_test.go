package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary be the sandbox's helper.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func newSandbox(t *testing.T) *Sandbox {
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	if s.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	return s
}

// sh runs a shell line under p and returns its output and whether it succeeded.
func sh(t *testing.T, s *Sandbox, p Policy, line string) (string, bool) {
	t.Helper()
	argv := s.Argv(p, "sh", "-c", line)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Root
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func layout(t *testing.T) (root, temp, outside string) {
	base := t.TempDir()
	for _, d := range []string{"project", "tmp", "outside"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	return filepath.Join(base, "project"), filepath.Join(base, "tmp"), filepath.Join(base, "outside")
}

func TestFiles(t *testing.T) {
	s := newSandbox(t)
	root, temp, outside := layout(t)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("readable"), 0o644)
	for _, tt := range []struct {
		mode Mode
		line string
		ok   bool
	}{
		{WorkspaceWrite, "touch in-project && mkdir -p sub/dir && echo x > sub/dir/f", true},
		{WorkspaceWrite, "touch " + temp + "/in-temp", true},
		{WorkspaceWrite, "cat " + outside + "/secret.txt", true},
		{WorkspaceWrite, "touch " + outside + "/pwned", false},
		{WorkspaceWrite, "echo x >> " + outside + "/secret.txt", false},
		{WorkspaceWrite, "rm " + outside + "/secret.txt", false},
		{WorkspaceWrite, "echo discarded > /dev/null", true},
		{ReadOnly, "touch created-read-only", false},
		{ReadOnly, "echo changed > in-project", false},
		{ReadOnly, "touch " + temp + "/in-temp-ro", true},
	} {
		p := Policy{Mode: tt.mode, Root: root, Temp: temp}
		out, ok := sh(t, s, p, tt.line)
		if ok != tt.ok {
			t.Errorf("%s: %q succeeded %v, want %v: %s", tt.mode, tt.line, ok, tt.ok, out)
		}
		if !ok && tt.mode == WorkspaceWrite && !strings.Contains(out, "Permission denied") {
			t.Errorf("%q failed without EACCES: %s", tt.line, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "readable" {
		t.Fatalf("a file outside changed: %q", b)
	}
}

func TestNetwork(t *testing.T) {
	s := newSandbox(t)
	if s.ABI() < 4 {
		t.Skip("network rules need Landlock ABI 4")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	root, temp, _ := layout(t)
	line := fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", port)
	if out, ok := sh(t, s, Policy{Mode: WorkspaceWrite, Root: root, Temp: temp}, line); ok {
		t.Fatalf("connected without the network allowed: %s", out)
	}
	if out, ok := sh(t, s, Policy{Mode: WorkspaceWrite, Root: root, Temp: temp, Network: true}, line); !ok {
		t.Fatalf("the network allowed, connecting failed: %s", out)
	}
}

func TestScopedIPC(t *testing.T) {
	s := newSandbox(t)
	if s.ABI() < 6 {
		t.Skip("scoping needs Landlock ABI 6")
	}
	ln, err := net.Listen("unix", "@agent-lsp-sandbox-test-"+fmt.Sprint(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	root, temp, _ := layout(t)
	p := Policy{Mode: WorkspaceWrite, Root: root, Temp: temp, Network: true}
	connect := fmt.Sprintf(`python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\0agent-lsp-sandbox-test-%d')"`, os.Getpid())
	if out, ok := sh(t, s, Policy{Mode: Off, Root: root, Temp: temp}, connect); !ok {
		t.Fatalf("the probe cannot connect even unsandboxed: %s", out)
	}
	if out, ok := sh(t, s, p, connect); ok {
		t.Fatalf("a sandboxed command reached an abstract socket outside: %s", out)
	}
	if out, ok := sh(t, s, p, fmt.Sprintf("kill -0 %d", os.Getpid())); ok {
		t.Fatalf("a sandboxed command could signal a process outside: %s", out)
	}
}

func TestWithoutLandlock(t *testing.T) {
	s, err := New(false)
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Root: "/r", Temp: "/t"}
	if s.Confines(p) || len(s.Argv(p, "sh", "-c", "x")) != 3 {
		t.Fatal("a sandbox without Landlock confines")
	}
	r := s.Describe(p)
	if r.LandlockABI != 0 || len(r.Enforced) != 0 || !strings.Contains(r.NotEnforced[0], "no Landlock") {
		t.Fatalf("report %+v", r)
	}
}

func TestReportAtThisABI(t *testing.T) {
	s := newSandbox(t)
	r := s.Describe(Policy{Mode: WorkspaceWrite, Root: "/r", Temp: "/t", Caches: []string{"/c"}})
	all := strings.Join(r.Enforced, "\n")
	if !strings.Contains(all, "write only in /t, /r, /c") {
		t.Fatalf("report %+v", r)
	}
	if s.ABI() >= 6 && (!strings.Contains(all, "TCP bind and connect denied") || !strings.Contains(all, "scoped")) {
		t.Fatalf("at ABI %d: %+v", s.ABI(), r)
	}
}
