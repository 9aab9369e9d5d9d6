//go:build unix

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// samples are small projects of three ecosystems whose own tests use what
// tests commonly use: temporary files, child processes, and (Go) a server
// on loopback.
var samples = []struct {
	name, tool, test string
	files            map[string]string
}{
	{"go", "go", "go test -count=1 ./...", map[string]string{
		"go.mod":    "module sample\n\ngo 1.22\n",
		"sample.go": "package sample\n\nfunc Add(a, b int) int { return a + b }\n",
		"sample_test.go": `package sample

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("2+3")
	}
	f := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("echo", "child").Output(); err != nil || string(out) != "child\n" {
		t.Fatal(err)
	}
}

func TestLoopback(t *testing.T) {
	if os.Getenv("NO_LOOPBACK") != "" {
		t.Skip("no loopback server in this sandbox")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.WriteString(c, "pong")
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "pong" {
		t.Fatal(string(b))
	}
}
`}},
	{"node", "npm", "npm test", map[string]string{
		"package.json": `{"name": "sample", "version": "1.0.0", "scripts": {"test": "node --test"}}` + "\n",
		"test/sample.test.js": `const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execSync } = require("node:child_process");

test("adds and writes", () => {
  assert.strictEqual(2 + 3, 5);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sample-"));
  fs.writeFileSync(path.join(dir, "x"), "x");
  assert.strictEqual(execSync("echo child").toString(), "child\n");
});
`}},
	{"python", "python3", "python3 -m unittest discover -s tests -v", map[string]string{
		"sample.py": "def add(a, b):\n    return a + b\n",
		"tests/test_sample.py": `import os, subprocess, sys, tempfile, unittest
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import sample

class SampleTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(sample.add(2, 3), 5)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "x"), "w") as f:
                f.write("x")
        self.assertEqual(subprocess.check_output(["echo", "child"]), b"child\n")
`}},
}

// A Go, a Node and a Python project's own tests pass inside the sandbox,
// under both mechanisms (the Go one's loopback server with namespaces:
// Landlock's TCP rules deny it in snapshot mode).
func TestProjectTestsPass(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		for _, sm := range samples {
			t.Run(sm.name, func(t *testing.T) {
				if _, err := exec.LookPath(sm.tool); err != nil {
					t.Skipf("no %s", sm.tool)
				}
				root, temp, _ := layout(t)
				for name, text := range sm.files {
					os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
					os.WriteFile(filepath.Join(root, name), []byte(text), 0o644)
				}
				gitRepo(t, root)
				p := policy(iso, root, temp)
				cache, _ := os.UserCacheDir()
				p.GoCache = filepath.Join(cache, "agent-lsp-test-sandbox-go-build") // warm across runs
				line := sm.test
				if iso == Snapshot {
					line = "NO_LOOPBACK=1 " + line
				}
				out, code, o := run(t, s, p, "TMPDIR="+temp+" "+line)
				if code != 0 {
					t.Fatalf("%s failed in the sandbox: %s (%+v)", sm.test, out, o)
				}
				if sm.name == "go" && iso == Namespaces && !strings.Contains(out, "ok") {
					t.Fatalf("%s", out)
				}
				if len(o.Undone) > 0 {
					t.Errorf("the sandbox undid something after a plain test run: %+v", o)
				}
			})
		}
	})
}
