package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func bodies(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID+"="+string(it.Body))
	}
	return out
}

const lockChildEnv = "AGENT_LSP_LOCK_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(lockChildEnv); path != "" {
		db, err := Open(path)
		if err != nil {
			fmt.Println("open failed:", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		os.Stdin.Read(make([]byte, 1)) // hold until the parent closes stdin
		db.Close()
		return
	}
	os.Exit(m.Run())
}

// TestSecondProcess documents what two processes on one file get: the first
// works, the second fails with ErrLocked within LockTimeout, and neither hangs.
func TestSecondProcess(t *testing.T) {
	path := t.TempDir() + "/shared.db"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "holding") {
		t.Fatalf("child: %s", buf[:n])
	}
	start := time.Now()
	_, err := Open(path)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open: %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("second open waited %s for the lock (LockTimeout is %s)", d, LockTimeout)
	}
	stdin.Close()
	cmd.Wait()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("open after the first process left: %v", err)
	}
	db.Close()
}

// The bucket names of formats 1 and 2 (store/internal/convert reads them),
// for tests that write such files.
var (
	legacySessions = []byte("sessions")
	legacyThreads  = []byte("threads")
	legacyHead     = []byte("head")
	legacyLists    = []byte("lists")
	legacyItems    = []byte("items")
)
