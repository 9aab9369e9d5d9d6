package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// childEnv, when set in a child of the test binary, names the write
// TestAtomicChild makes: "fsize" under RLIMIT_FSIZE, "plain" as it is.
const childEnv = "AGENT_LSP_ATOMIC_CHILD"

// TestAtomicChild is not a test of its own: run by a test in a child
// process, it writes AGENT_LSP_ATOMIC_DATA bytes to the file
// AGENT_LSP_ATOMIC_FILE and prints how it went.
func TestAtomicChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run by other tests in a child process")
	}
	if mode == "fsize" {
		lim := syscall.Rlimit{Cur: 64 << 10, Max: 64 << 10}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(3)
		}
	}
	path := os.Getenv("AGENT_LSP_ATOMIC_FILE")
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	var n int
	fmt.Sscan(os.Getenv("AGENT_LSP_ATOMIC_DATA"), &n)
	w, err := WriteAtomic(r, filepath.Base(path), bytes.Repeat([]byte("n"), n), false)
	var damaged *DamagedError
	switch {
	case errors.As(err, &damaged):
		fmt.Println("damaged:", err)
	case err != nil:
		fmt.Println("refused:", err)
	default:
		fmt.Printf("written: %q\n", w.InPlace)
	}
	os.Exit(0)
}

func runChild(t *testing.T, mode, path string, n int, wrap ...string) string {
	t.Helper()
	args := append(wrap, os.Args[0], "-test.run=^TestAtomicChild$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "AGENT_LSP_ATOMIC_FILE="+path, fmt.Sprintf("AGENT_LSP_ATOMIC_DATA=%d", n))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

// Under RLIMIT_FSIZE a write that would make the file too big is refused,
// and the file keeps its old content whole: replaced (a new file that
// could not be written is dropped) or in place (the old content is put
// back).
func TestWriteAtomicFileSizeLimit(t *testing.T) {
	for _, how := range []string{"replace", "in place"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "big.txt")
			old := bytes.Repeat([]byte("o"), 10<<10)
			os.WriteFile(path, old, 0o644)
			if how == "in place" {
				os.Link(path, filepath.Join(dir, "other-name"))
			}
			out := runChild(t, "fsize", path, 200<<10)
			if !strings.HasPrefix(out, "refused:") || !strings.Contains(out, "file too large") {
				t.Fatalf("the child: %s", out)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
				t.Fatalf("the file has %d bytes after a refused write, want its old %d", len(b), len(old))
			}
			leftovers(t, dir)
		})
	}
}

// A bind-mounted file cannot be replaced by a rename (EBUSY): it is
// rewritten in place (as root, in a mount namespace of its own).
func TestWriteAtomicBindMounted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount a file")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	dir := t.TempDir()
	path, src := filepath.Join(dir, "mounted.txt"), filepath.Join(t.TempDir(), "source.txt")
	os.WriteFile(path, []byte("target"), 0o644)
	os.WriteFile(src, []byte("bound"), 0o644)
	// sh mounts, then runs the child in the namespace.
	script := `mount --bind "$1" "$2" && shift 2 && exec "$@"`
	out := runChild(t, "plain", path, 5, unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh", src, path)
	if !strings.Contains(out, "written:") || !strings.Contains(out, "busy") {
		t.Fatalf("the child: %s", out)
	}
	if b, _ := os.ReadFile(src); string(b) != "nnnnn" {
		t.Fatalf("the mounted file: %q", b)
	}
	leftovers(t, dir)
}
