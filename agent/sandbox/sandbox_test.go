//go:build unix

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFiles(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		root, temp, outside := layout(t)
		os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("readable"), 0o644)
		tmp := "true"
		if iso == Namespaces {
			tmp = "touch /tmp/in-tmp" // its own
		}
		for _, tt := range []struct {
			mode Mode
			line string
			ok   bool
		}{
			{WorkspaceWrite, "touch in-project && mkdir -p sub/dir && echo x > sub/dir/f", true},
			{WorkspaceWrite, "touch " + temp + "/in-temp && " + tmp, true},
			{WorkspaceWrite, "cat " + outside + "/secret.txt", true},
			{WorkspaceWrite, "touch " + outside + "/pwned", false},
			{WorkspaceWrite, "echo x >> " + outside + "/secret.txt", false},
			{WorkspaceWrite, "rm " + outside + "/secret.txt", false},
			{WorkspaceWrite, "echo discarded > /dev/null", true},
			{ReadOnly, "touch created-read-only", false},
			{ReadOnly, "echo changed > in-project", false},
			{ReadOnly, "touch " + temp + "/in-temp-ro", true},
		} {
			p := policy(iso, root, temp)
			p.Mode = tt.mode
			out, code, _ := run(t, s, p, tt.line)
			if (code == 0) != tt.ok {
				t.Errorf("%s: %q succeeded %v, want %v: %s", tt.mode, tt.line, code == 0, tt.ok, out)
			}
			if code != 0 && tt.mode == WorkspaceWrite && !strings.Contains(out, "Permission denied") {
				t.Errorf("%q failed without EACCES: %s", tt.line, out)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "readable" {
			t.Fatalf("a file outside changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(root, "created-read-only")); err == nil {
			t.Fatal("a read-only command wrote in the project")
		}
	})
}

// With namespaces a command's temporary directory is its own: what it
// leaves there is gone with it, and it sees nothing of the machine's.
func TestPrivateTemp(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		if iso != Namespaces {
			t.Skip("a private /tmp needs namespaces")
		}
		root, temp, _ := layout(t)
		mine, err := os.CreateTemp("", "agent-lsp-host-file-")
		if err != nil {
			t.Fatal(err)
		}
		mine.Close()
		defer os.Remove(mine.Name())
		p := policy(iso, root, temp)
		out, code, _ := run(t, s, p, "test ! -e "+mine.Name()+" && echo left > /tmp/left && echo left > "+temp+"/left2 && ls /tmp")
		if code != 0 {
			t.Fatalf("the command saw the machine's /tmp: %s", out)
		}
		if _, err := os.Stat("/tmp/left"); err == nil {
			os.Remove("/tmp/left")
			t.Fatal("a command's /tmp file is on the machine's /tmp")
		}
		if _, err := os.Stat(filepath.Join(temp, "left2")); err == nil {
			t.Fatal("a command's file in its temporary directory is on the machine")
		}
	})
}

// A command that fills its private /tmp gets ENOSPC there, and the next
// command runs as usual.
func TestPrivateTempFull(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			if iso != Namespaces {
				t.Skip("a private /tmp needs namespaces")
			}
			root, temp, _ := layout(t)
			p := policy(iso, root, temp)
			p.TempSize = 4 << 20
			out, code, _ := run(t, s, p, "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; echo rc=$?")
			if code != 0 || !strings.Contains(out, "No space left on device") {
				t.Fatalf("filling /tmp: %d %s", code, out)
			}
			if out, code, _ := run(t, s, p, "echo ok > /tmp/small && cat /tmp/small"); code != 0 || out != "ok\n" {
				t.Fatalf("the next command: %d %s", code, out)
			}
		})
	})
}

func TestNetwork(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		if s.ABI() < 4 && iso == Snapshot {
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
		if out, code, _ := run(t, s, policy(iso, root, temp), line); code == 0 {
			t.Fatalf("connected without the network allowed: %s", out)
		}
		p := policy(iso, root, temp)
		p.Network = true
		if out, code, _ := run(t, s, p, line); code != 0 {
			t.Fatalf("the network allowed, connecting failed: %s", out)
		}
	})
}

// With namespaces and the network off, a command's own loopback works: its
// tests may start servers and reach them (and nothing else).
func TestOwnLoopback(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		if iso != Namespaces {
			t.Skip("Landlock's TCP rules deny the command's own loopback too")
		}
		root, temp, _ := layout(t)
		line := `python3 -c "
import socket
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'ping'); print(a.recv(4).decode())"`
		if out, code, _ := run(t, s, policy(iso, root, temp), line); code != 0 || !strings.Contains(out, "ping") {
			t.Fatalf("%d %s", code, out)
		}
	})
}

func TestScopedIPC(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		if s.ABI() < 6 {
			t.Skip("scoping needs Landlock ABI 6")
		}
		name := fmt.Sprintf("agent-lsp-sandbox-test-%d-%s", os.Getpid(), iso)
		ln, err := net.Listen("unix", "@"+name)
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
		p := policy(iso, root, temp)
		p.Network = true // no network namespace: Landlock's scope alone must stop it
		connect := fmt.Sprintf(`python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\0%s')"`, name)
		if out, code, _ := run(t, s, Policy{Mode: Off, Root: root, Temp: temp}, connect); code != 0 {
			t.Fatalf("the probe cannot connect even unsandboxed: %s", out)
		}
		if out, code, _ := run(t, s, p, connect); code == 0 {
			t.Fatalf("a sandboxed command reached an abstract socket outside: %s", out)
		}
		if out, code, _ := run(t, s, p, fmt.Sprintf("kill -0 %d", os.Getpid())); code == 0 {
			t.Fatalf("a sandboxed command could signal a process outside: %s", out)
		}
	})
}

func TestWithoutLandlock(t *testing.T) {
	s, err := New(false)
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Root: "/r", Temp: "/t"}
	if s.Confines(p) || len(s.Argv(p, "sh", "-c", "x")) != 3 || s.Isolation(p) != None {
		t.Fatal("a sandbox without Landlock confines")
	}
	r := s.Describe(p)
	if r.LandlockABI != 0 || len(r.Enforced) != 0 || r.Isolation != None || !strings.Contains(r.NotEnforced[0], "no Landlock") {
		t.Fatalf("report %+v", r)
	}
}

func TestReportAtThisABI(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		p := policy(iso, "/r", "/t")
		p.Caches = []string{"/c"}
		r := s.Describe(p)
		all := strings.Join(r.Enforced, "\n")
		not := strings.Join(r.NotEnforced, "\n")
		if r.Isolation != iso || !strings.Contains(all, "write only in /t, /r, /c") || !strings.Contains(all, "capabilities: none") {
			t.Fatalf("report %+v", r)
		}
		if s.ABI() >= 6 && !strings.Contains(all, "scoped") {
			t.Fatalf("at ABI %d: %+v", s.ABI(), r)
		}
		switch iso {
		case Namespaces:
			for _, want := range []string{"read-only mounts of every .git", "PID namespace", "private tmpfs of 1024 MiB on /tmp and /t", "network namespace", "sockets bound outside"} {
				if !strings.Contains(all, want) {
					t.Errorf("namespaces: %q missing from %s", want, all)
				}
			}
		case Snapshot:
			for _, want := range []string{"restored after", "subreaper"} {
				if !strings.Contains(all, want) {
					t.Errorf("snapshot: %q missing from %s", want, all)
				}
			}
			for _, want := range []string{"UDP", "pathname Unix sockets", "private /tmp"} {
				if !strings.Contains(not, want) {
					t.Errorf("snapshot: %q missing from what is not enforced: %s", want, not)
				}
			}
			if s.ABI() >= 4 && !strings.Contains(all, "TCP bind and connect denied") {
				t.Errorf("snapshot at ABI %d: %s", s.ABI(), all)
			}
		}
		if r.Processes == "" && os.Getuid() != 0 {
			t.Errorf("an unprivileged user has RLIMIT_NPROC at least: %+v", r)
		}
	})
}

// A program below /tmp (a tool on PATH, an MCP server) still runs with a
// private /tmp: its directory is carried over, read-only.
func TestProgramsBelowTmpRun(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		root, temp, _ := layout(t)
		bin := t.TempDir()
		tool := filepath.Join(bin, "tool.sh")
		os.WriteFile(tool, []byte("#!/bin/sh\necho tool-ran\n"), 0o755)
		p := policy(iso, root, temp)
		for _, argv := range [][]string{{tool}, {"sh", "-c", "tool.sh && touch " + bin + "/written"}} {
			cmd, r := s.Command(context.Background(), p, argv)
			cmd.Dir, cmd.Env = root, append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			r.Finish()
			if !strings.Contains(string(out), "tool-ran") {
				t.Fatalf("%q: %v %s", argv, err, out)
			}
		}
		if _, err := os.Stat(filepath.Join(bin, "written")); err == nil {
			t.Fatal("a program's directory was writable")
		}
	})
}
