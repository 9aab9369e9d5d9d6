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
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

const (
	crashChildEnv      = "AGENT_LSP_CRASH_CHILD"
	crashDurabilityEnv = "AGENT_LSP_CRASH_DURABILITY"
)

// crashGraph runs 200 steps: 100 "inc" steps, each followed by a step of four
// parallel "work" tasks.
func crashGraph(t testing.TB, ts testSchema) *Graph {
	g, err := New(ts.Schema).
		Node("inc", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s) + 1
			return NewPatch(ts.count.Set(c), ts.msgs.Append(tmsg{ID: fmt.Sprintf("m%03d", c), Role: "ai", Content: strconv.Itoa(c)})), nil
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
	db, err := store.Open(path, store.WithDefaultDurability(store.Durability(os.Getenv(crashDurabilityEnv))))
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
	if _, lerr := db.Load(context.Background(), "crash", ""); lerr != nil {
		_, err = g.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(tmsg{ID: "input", Role: "human", Content: "count"})))
	} else {
		_, err = g.Resume(context.Background(), cfg)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	fmt.Fprintln(out, "finished")
	out.Flush()
	time.Sleep(time.Minute) // the parent kills the process here: the result was reported
	db.Close()
}

// finalState completes the run as the child would (resuming it, or starting
// it when nothing was durable yet) and returns its final state.
func finalState(t *testing.T, cp store.Checkpointer) (msgs []string, items []int, count int) {
	ts := newTestSchema()
	g := crashGraph(t, ts)
	cfg := Config{Thread: "crash", Checkpointer: cp, StepLimit: 1000}
	var res Result
	var err error
	if _, lerr := cp.Load(context.Background(), "crash", ""); lerr != nil {
		res, err = g.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(tmsg{ID: "input", Role: "human", Content: "count"})))
	} else {
		res, err = g.Resume(context.Background(), cfg)
	}
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
		NewPatch(ts.msgs.Append(tmsg{ID: "input", Role: "human", Content: "count"}))); err != nil {
		t.Fatal(err)
	}
	wantMsgs, wantItems, wantCount := finalState(t, ref)
	if len(wantMsgs) != 101 || len(wantItems) != 400 || wantCount != 100 {
		t.Fatalf("reference run: %d msgs, %d items, count %d", len(wantMsgs), len(wantItems), wantCount)
	}
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		for _, killAt := range []int{1, 2, 57, 120, 199, -1} { // -1: right after the result was reported
			name := fmt.Sprintf("%s/kill-after-step-%d", d, killAt)
			if killAt < 0 {
				name = fmt.Sprintf("%s/kill-after-done", d)
			}
			t.Run(name, func(t *testing.T) {
				path := t.TempDir() + "/crash.db"
				plan := []int{killAt, killAt + 3}
				if killAt < 0 {
					plan = []int{-1}
				}
				for _, at := range plan {
					reported, killed := runChild(t, path, d, at)
					if !killed {
						break // the child finished before the kill point
					}
					db, err := store.Open(path, store.WithDefaultDurability(d))
					if err != nil {
						t.Fatalf("reopen after SIGKILL: %v", err)
					}
					durable := -1
					if st, err := db.Load(context.Background(), "crash", ""); err == nil {
						durable = st.Step
						if at < 0 && (st.Status != StatusDone || st.Step != 200) {
							t.Fatalf("run reported done, but the store has step %d status %s", st.Step, st.Status)
						}
					}
					db.Close()
					if d == store.Sync && durable < reported {
						t.Fatalf("sync: step %d was reported, only %d is durable", reported, durable)
					}
					if d == store.Batched && reported-durable > 2*store.BatchSteps {
						t.Fatalf("batched: lost %d steps, more than two groups of %d", reported-durable, store.BatchSteps)
					}
				}
				db, err := store.Open(path, store.WithDefaultDurability(d))
				if err != nil {
					t.Fatal(err)
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
}

// runChild runs the crash graph in a child process and SIGKILLs it once it
// reports step at (or, for at < 0, its result). It returns the last step the
// child reported and whether it was killed.
func runChild(t *testing.T, path string, d store.Durability, at int) (int, bool) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashDurabilityEnv+"="+string(d))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(stdout)
	reported := -1
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
		var n int
		if _, err := fmt.Sscanf(line, "step %d", &n); err == nil {
			reported = n
			if at >= 0 && n >= at {
				cmd.Process.Signal(syscall.SIGKILL)
				return reported, true
			}
		}
		if line == "finished" {
			cmd.Process.Signal(syscall.SIGKILL) // it waits to be killed after reporting
			return reported, at < 0
		}
	}
	return reported, false
}
