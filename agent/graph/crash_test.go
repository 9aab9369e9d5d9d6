package graph

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

const crashChildEnv = "AGENT_LSP_CRASH_CHILD"

// crashGraph runs 200 steps: 100 "inc" steps, each followed by a step of four
// parallel "work" tasks.
func crashGraph(t testing.TB, ts testSchema) *Graph {
	g, err := New(ts.Schema).
		Node("inc", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s) + 1
			return NewPatch(ts.count.Set(c), ts.msgs.Append(message.Message{ID: fmt.Sprintf("m%03d", c), Role: message.AI, Content: strconv.Itoa(c)})), nil
		}).
		Node("work", func(ctx context.Context, s State) (Patch, error) {
			var i int
			if err := s.Arg(&i); err != nil {
				return Patch{}, err
			}
			return NewPatch(ts.items.Append(ts.count.Get(s)*10 + i)), nil
		}).
		Edge(Start, "inc").
		Branch("inc", func(s State) []Route {
			return []Route{Send("work", 0), Send("work", 1), Send("work", 2), Send("work", 3)}
		}).
		Branch("work", func(s State) []Route {
			if ts.count.Get(s) >= 100 {
				return []Route{To(End)}
			}
			return []Route{To("inc")}
		}).Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMain lets the crash test re-execute this binary as the child that gets killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

func crashChild(path string) {
	db, err := store.Open(path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	ts := newTestSchema()
	g := crashGraph(nil, ts)
	out := bufio.NewWriter(os.Stdout)
	cfg := Config{Thread: "crash", Checkpointer: db, StepLimit: 1000, Events: func(e Event) {
		if e.Type == StepEnd {
			fmt.Fprintf(out, "step %d\n", e.Step)
			out.Flush()
		}
	}}
	if _, err := db.Load(context.Background(), "crash", ""); err != nil {
		_, err = g.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(message.Message{ID: "input", Role: message.Human, Content: "count"})))
	} else {
		_, err = g.Resume(context.Background(), cfg)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	fmt.Fprintln(out, "finished")
	out.Flush()
	db.Close()
}

func finalState(t *testing.T, cp store.Checkpointer) (msgs []string, items []int, count int) {
	ts := newTestSchema()
	g := crashGraph(t, ts)
	res, err := g.Resume(context.Background(), Config{Thread: "crash", Checkpointer: cp, StepLimit: 1000})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("resume: %s %v", res.Status, err)
	}
	for _, m := range ts.msgs.Get(res.State) {
		msgs = append(msgs, m.ID)
	}
	return msgs, ts.items.Get(res.State), ts.count.Get(res.State)
}

func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	// The reference: one uninterrupted run.
	ref := store.NewMemory()
	ts := newTestSchema()
	if _, err := crashGraph(t, ts).Invoke(context.Background(), Config{Thread: "crash", Checkpointer: ref, StepLimit: 1000},
		NewPatch(ts.msgs.Append(message.Message{ID: "input", Role: message.Human, Content: "count"}))); err != nil {
		t.Fatal(err)
	}
	wantMsgs, wantItems, wantCount := finalState(t, ref)
	if len(wantMsgs) != 101 || len(wantItems) != 400 || wantCount != 100 {
		t.Fatalf("reference run: %d msgs, %d items, count %d", len(wantMsgs), len(wantItems), wantCount)
	}

	for _, killAt := range []int{1, 2, 57, 120, 199} {
		t.Run(fmt.Sprintf("kill-after-step-%d", killAt), func(t *testing.T) {
			path := t.TempDir() + "/crash.db"
			// Kill once at killAt, then let a second child get killed again a bit later.
			for _, at := range []int{killAt, killAt + 3} {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(stdout)
				killed := false
				for sc.Scan() {
					line := sc.Text()
					if strings.HasPrefix(line, "error") {
						t.Fatalf("child: %s", line)
					}
					var n int
					if _, err := fmt.Sscanf(line, "step %d", &n); err == nil && n >= at {
						cmd.Process.Signal(syscall.SIGKILL)
						killed = true
						break
					}
				}
				cmd.Wait()
				if !killed {
					break // the child finished before reaching the kill point
				}
			}
			db, err := store.Open(path)
			if err != nil {
				t.Fatalf("reopen after SIGKILL: %v", err)
			}
			defer db.Close()
			msgs, items, count := finalState(t, db)
			if !reflect.DeepEqual(msgs, wantMsgs) || !reflect.DeepEqual(items, wantItems) || count != wantCount {
				t.Fatalf("after crash: %d msgs, %d items, count %d; want %d, %d, %d",
					len(msgs), len(items), count, len(wantMsgs), len(wantItems), wantCount)
			}
		})
	}
}
