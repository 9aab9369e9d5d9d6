//go:build unix

package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const historyChildEnv = "AGENT_LSP_HISTORY_CHILD"

// TestHistoryWriterChild is the writer TestHistoryUsageAfterKill kills: it
// writes entries and 8 KB contents to the bbolt file the variable names,
// each content synced, printing the number of each once written; it never
// stops on its own.
func TestHistoryWriterChild(t *testing.T) {
	path := os.Getenv(historyChildEnv)
	if path == "" {
		t.Skip("the child of TestHistoryUsageAfterKill")
	}
	db, err := Open(path, WithDefaultDurability(Batched))
	if err != nil {
		t.Fatal(err)
	}
	h, ctx := NewHistory(db), context.Background()
	for i := 1; ; i++ {
		b := make([]byte, 8<<10)
		rand.Read(b)
		if err := h.PutBlob(ctx, "s-kill", fmt.Sprintf("h%06d", i), b, Sync); err != nil {
			t.Fatal(err)
		}
		if err := h.PutEntry(ctx, "s-kill", i, json.RawMessage(fmt.Sprintf(`{"n":%d,"files":[{"after":"h%06d"}]}`, i, i)), ""); err != nil {
			t.Fatal(err)
		}
		fmt.Println(i)
	}
}

// TestHistoryUsageAfterKill: a writer of a session's history killed with
// SIGKILL mid-write leaves a history whose size (History.Usage) is exactly
// what the store holds: every synced content counted at its stored size,
// nothing counted that is not there; pruning then takes exactly the
// pruned contents' bytes off, and that holds across a reopen.
func TestHistoryUsageAfterKill(t *testing.T) {
	path := t.TempDir() + "/history.db"
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryWriterChild$")
	cmd.Env = append(os.Environ(), historyChildEnv+"="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	written := 0
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(2 * time.Minute)
	for written < 40 && sc.Scan() && time.Now().Before(deadline) {
		if n, err := strconv.Atoi(string(bytes.TrimSpace(sc.Bytes()))); err == nil {
			written = n
		}
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if written < 40 {
		t.Fatalf("the writer wrote %d contents before the deadline", written)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatalf("open after the kill: %v", err)
	}
	h, ctx := NewHistory(db), context.Background()
	want := func() (int64, *Blobs) {
		entries, err := h.Entries(ctx, "s-kill")
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := h.LoadBlobs(ctx, "s-kill")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, b := range entries {
			n += int64(len(b))
		}
		for k := range blobs.raw {
			n += int64(blobs.Size(k))
		}
		return n, blobs
	}
	total, blobs := want()
	u, err := h.Usage(ctx, "s-kill")
	if err != nil || u.Total() != total || len(u.Blobs) < written {
		t.Fatalf("usage after the kill: %d bytes in %d contents (%v), the store holds %d bytes; %d contents were synced", u.Total(), len(u.Blobs), err, total, written)
	}
	var pruned []string
	var size int64
	for i := 1; i <= 10; i++ {
		k := fmt.Sprintf("h%06d", i)
		pruned, size = append(pruned, k), size+int64(blobs.Size(k))
	}
	if err := h.DeleteBlobs(ctx, "s-kill", pruned, Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h = NewHistory(db)
	after, err := h.Usage(ctx, "s-kill")
	if err != nil || after.Total() != u.Total()-size || len(after.Blobs) != len(u.Blobs)-10 {
		t.Fatalf("usage after pruning 10 contents (%d bytes) and reopening: %d, want %d (%v)", size, after.Total(), u.Total()-size, err)
	}
}
