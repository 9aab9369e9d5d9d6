package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func backends(t *testing.T) map[string]Store {
	db, err := Open(t.TempDir() + "/sub/dir/s.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return map[string]Store{"memory": NewMemory(), "bbolt": db}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func bodies(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID+"="+string(it.Body))
	}
	return out
}

func TestCheckpointer(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Load(ctx, "t", ""); !errors.Is(err, ErrNotFound) {
				t.Fatalf("load of unknown thread: %v", err)
			}
			steps := []Checkpoint{
				{Step: 0, Status: "running", Values: map[string]json.RawMessage{"n": raw("1")},
					Lists: map[string][]Op{"m": {{Kind: OpUpsert, ID: "a", Body: raw(`"A"`)}, {Kind: OpUpsert, ID: "b", Body: raw(`"B"`)}}, "x": {{Body: raw("1")}, {Body: raw("2")}}},
					Next:  []Task{{ID: "t1", Node: "agent"}}},
				{Step: 1, Status: "running", Values: map[string]json.RawMessage{"n": raw("2")},
					Lists: map[string][]Op{"m": {{Kind: OpUpsert, ID: "a", Body: raw(`"A2"`)}, {Kind: OpUpsert, ID: "c", Body: raw(`"C"`)}, {Kind: OpRemove, ID: "b"}}}},
				{Step: 2, Status: "done", Lists: map[string][]Op{"x": {{Kind: OpReset}, {Body: raw("3")}}}},
			}
			for _, cp := range steps {
				cp.Thread = "t"
				if err := s.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			st, err := s.Load(ctx, "t", "")
			if err != nil {
				t.Fatal(err)
			}
			if st.Step != 2 || st.Status != "done" || string(st.Values["n"]) != "2" || len(st.Next) != 0 {
				t.Fatalf("head: %+v", st)
			}
			if got := bodies(st.Lists["m"]); !reflect.DeepEqual(got, []string{`a="A2"`, `c="C"`}) {
				t.Errorf("messages list: %v", got)
			}
			if got := bodies(st.Lists["x"]); !reflect.DeepEqual(got, []string{"=3"}) {
				t.Errorf("append list: %v", got)
			}
			// Namespaces are separate threads.
			if _, err := s.Load(ctx, "t", "subagent-1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("namespace leaked: %v", err)
			}
		})
	}
}

func TestPendingWrites(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s.Put(ctx, Checkpoint{Thread: "t", Step: 3, Status: "running", Next: []Task{{ID: "a"}, {ID: "b"}}})
			s.PutWrite(ctx, "t", "", "a", raw(`"first"`))
			s.PutWrite(ctx, "t", "", "a", raw(`"second"`)) // insert-if-absent
			st, _ := s.Load(ctx, "t", "")
			if len(st.Pending) != 1 || string(st.Pending["a"]) != `"first"` {
				t.Fatalf("pending: %v", st.Pending)
			}
			// A status update of the same step keeps them.
			s.Put(ctx, Checkpoint{Thread: "t", Step: 3, Status: "cancelled", Next: st.Next})
			if st, _ = s.Load(ctx, "t", ""); len(st.Pending) != 1 || st.Status != "cancelled" {
				t.Fatalf("after status update: %v %s", st.Pending, st.Status)
			}
			// The next step's checkpoint drops them.
			s.Put(ctx, Checkpoint{Thread: "t", Step: 4, Status: "running"})
			if st, _ = s.Load(ctx, "t", ""); len(st.Pending) != 0 {
				t.Fatalf("pending survived the step: %v", st.Pending)
			}
		})
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for i, p := range []string{"web", "api", "web"} {
				sess := Session{ID: fmt.Sprintf("s%d", i), Project: p, Title: "t", Status: "done", Created: base, Updated: base.Add(time.Duration(i) * time.Hour), Messages: i}
				if err := s.PutSession(ctx, sess); err != nil {
					t.Fatal(err)
				}
			}
			// s1 also has a checkpoint written together with its index entry.
			upd := Session{ID: "s1", Project: "api", Status: "running", Created: base, Updated: base.Add(5 * time.Hour), Messages: 7}
			s.Put(ctx, Checkpoint{Thread: "s1", Step: 0, Index: &upd})
			s.Put(ctx, Checkpoint{Thread: "s1", Namespace: "subagent-ab", Step: 0})

			all, _ := s.Sessions(ctx, "")
			var ids []string
			for _, x := range all {
				ids = append(ids, x.ID)
			}
			if !reflect.DeepEqual(ids, []string{"s1", "s2", "s0"}) {
				t.Fatalf("newest first: %v", ids)
			}
			web, _ := s.Sessions(ctx, "web")
			if len(web) != 2 {
				t.Fatalf("project filter: %v", web)
			}
			got, err := s.Session(ctx, "s1")
			if err != nil || got.Messages != 7 || got.Status != "running" {
				t.Fatalf("session s1: %+v %v", got, err)
			}
			if _, err := s.Session(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("unknown session: %v", err)
			}
			if ok, _ := s.DeleteSession(ctx, "s1"); !ok {
				t.Fatal("delete s1: not found")
			}
			if ok, _ := s.DeleteSession(ctx, "s1"); ok {
				t.Fatal("second delete reported true")
			}
			for _, ns := range []string{"", "subagent-ab"} {
				if _, err := s.Load(ctx, "s1", ns); !errors.Is(err, ErrNotFound) {
					t.Fatalf("checkpoint %q survived delete: %v", ns, err)
				}
			}
			n, err := s.DeleteOlderThan(ctx, base.Add(90*time.Minute))
			if err != nil || n != 1 {
				t.Fatalf("retention removed %d, %v", n, err)
			}
			left, _ := s.Sessions(ctx, "")
			if len(left) != 1 || left[0].ID != "s2" {
				t.Fatalf("after retention: %v", left)
			}
		})
	}
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
