//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// sessionsCLI runs `agent-lsp sessions ARGS --store path` with no daemon,
// and returns its output and exit code.
func sessionsCLI(t *testing.T, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append(append([]string{"sessions"}, args...), "--store", path)...)
	cmd.Env = append(os.Environ(), "AGENT_LSP_DAEMON=off")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// The sessions commands on a store with a damaged record: list and show
// print what they can, name the damage and exit 1, leaving the file as it
// is; check lists the damaged record and exits 0. On a store whose pages
// are damaged (cut short): list reads what can be salvaged, exits 1 and
// leaves the file where and as it is; a command that writes salvages it,
// says what it kept and lost, moves the damaged file aside, and exits 1.
func TestSessionsOnDamagedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	fillStore(t, path, 6, 6)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The session record of s-old-001 (sealed, not compressed) gets a bit
	// flipped, wherever a copy of it is.
	rec := []byte(`"session":"s-old-001"`)
	if bytes.Count(data, rec) == 0 {
		t.Fatal("the session record is not in the file")
	}
	for i := bytes.Index(data, rec); i >= 0; {
		data[i+len(rec)-2] ^= 0x04 // "s-old-001" -> "s-old-041"
		next := bytes.Index(data[i+1:], rec)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	os.WriteFile(path, data, 0o600)

	out, errOut, code := sessionsCLI(t, path, "list")
	if code != 1 || strings.Count(out, "s-old-") != 5 || !strings.Contains(errOut, `session "s-old-001"`) || !strings.Contains(errOut, "damaged") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = sessionsCLI(t, path, "show", "s-old-001")
	if code != 1 || !strings.Contains(errOut, "damaged") {
		t.Fatalf("show: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = sessionsCLI(t, path, "check")
	if code != 0 || !strings.Contains(out, "1 damaged") || !strings.Contains(out, `session "s-old-001": the session's record`) {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
	}
	if left, _ := os.ReadFile(path); !bytes.Equal(left, data) {
		t.Fatal("a command that reads changed the file")
	}

	// Cut short: the pages of the newest commit are not all there.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	db.Close()
	cut := data[:used-4096]
	os.WriteFile(path, cut, 0o600)
	out, errOut, code = sessionsCLI(t, path, "list")
	if code != 1 || !strings.Contains(errOut, "cut short") || !strings.Contains(errOut, "left as it is") {
		t.Fatalf("list of a file cut short: exit %d\n%s\n%s", code, out, errOut)
	}
	if left, _ := os.ReadFile(path); !bytes.Equal(left, cut) {
		t.Fatal("list changed a damaged file")
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 0 {
		t.Fatalf("list moved the file aside: %v", aside)
	}
	out, errOut, code = sessionsCLI(t, path, "compact")
	if code != 1 || !strings.Contains(errOut, "salvaged") || !strings.Contains(errOut, "moved to "+path+".corrupt-") {
		t.Fatalf("compact of a file cut short: exit %d\n%s\n%s", code, out, errOut)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("the damaged file was not kept aside: %v", aside)
	}
	if _, errOut, code = sessionsCLI(t, path, "check"); code != 0 {
		t.Fatalf("check of the salvaged store: exit %d %s", code, errOut)
	}
}
