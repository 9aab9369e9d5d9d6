package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// Batched writers blocked on a full queue while the store closes get
// ErrClosed (or were committed); none panics, and nothing is accepted
// after Close.
func TestCommitterCloseWithWritersWaiting(t *testing.T) {
	for range 20 {
		var mu sync.Mutex
		committed := 0
		c := NewCommitter(Batched, func(w []int) (int, error) {
			time.Sleep(2 * time.Millisecond) // a slow commit: the queue fills behind it
			mu.Lock()
			committed += len(w)
			mu.Unlock()
			return 1, nil
		}, func(error) bool { return true }, concat, []int{})
		var wg sync.WaitGroup
		errs := make(chan error, 4*BatchSteps)
		for range 4 * BatchSteps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- c.Write(Batched, "t", "", []int{1}, false)
			}()
		}
		time.Sleep(time.Millisecond)
		c.Close()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("a writer got %v", err)
			}
		}
		if err := c.Write(Batched, "t", "", []int{1}, true); !errors.Is(err, ErrClosed) {
			t.Fatalf("a write after Close: %v", err)
		}
	}
}

// A batched step after a quiet spell is committed at once; the steps that
// follow within the window wait for it (or for a waiter, or a full group)
// and share one commit.
func TestBatchedCommitsAtOnceAfterQuiet(t *testing.T) {
	commits := make(chan int, 16)
	c := newCommitter(Batched, time.Hour, func(w []int) (int, error) {
		commits <- len(w)
		return 1, nil
	}, func(error) bool { return true }, concat, []int{0})
	defer c.Close()
	next := func(what string) int {
		t.Helper()
		select {
		case n := <-commits:
			return n
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no commit", what)
			return 0
		}
	}
	c.Submit([]int{1}, false)
	if n := next("the first step, an hour's window"); n != 1 {
		t.Fatalf("the first commit took %d jobs, want 1", n)
	}
	c.Submit([]int{2}, false)
	c.Submit([]int{3}, false)
	select {
	case n := <-commits:
		t.Fatalf("steps within the window were committed before it ended (%d jobs)", n)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Flush(); err != nil { // a waiter ends the gathering
		t.Fatal(err)
	}
	if n := next("after Flush"); n != 3 {
		t.Fatalf("the second commit took %d jobs, want the two steps and Flush's", n)
	}
	for i := range BatchSteps { // a full group is committed without waiting for the window
		c.Submit([]int{i}, false)
	}
	if n := next("a full group"); n < BatchSteps {
		t.Fatalf("a full group's commit took %d jobs", n)
	}
}

func concat(ws [][]int) []int { return slices.Concat(ws...) }

// step is one write of the fault test: a thread's step.
type step struct {
	thread string
	n      int
}

// checkWritesAfterFailure checks that after a group commit failed at a step
// of thread failed, its later writes (step perThread on) fail with boom until
// its run ends, the other threads' writes go through, and a new run of the
// failed thread writes again.
func checkWritesAfterFailure(t *testing.T, c *Committer[[]step], threads []string, failed string, perThread int, boom error) {
	t.Helper()
	for _, th := range threads {
		err := c.Write(Batched, th, "", []step{{th, perThread}}, false)
		if th == failed && !errors.Is(err, boom) {
			t.Errorf("the failed thread's next write: %v, want the failure", err)
		}
		if th != failed && err != nil {
			t.Errorf("thread %s's next write: %v", th, err)
		}
	}
	if err := c.Write(Batched, failed, "", []step{{failed, perThread + 1}}, true); !errors.Is(err, boom) {
		t.Errorf("the failed run's end: %v, want the failure", err)
	}
	if err := c.Write(Batched, failed, "", []step{{failed, 100}}, true); err != nil {
		t.Errorf("a new run of the thread after its failed run ended: %v", err)
	}
}

// A group commit that fails, at each position of a group in turn, never
// stores a thread's write after one of its writes that failed: every
// thread keeps a prefix of its steps (the failed thread's up to the failed
// step, the others' whole), the failed thread's later writes fail with the
// same error until its run ends, and the other threads go on.
func TestGroupFailureKeepsWholeSteps(t *testing.T) {
	threads := []string{"a", "b", "c"}
	const perThread = 4
	var order []step // interleaved: a0 b0 c0 a1 b1 c1 ...
	for n := range perThread {
		for _, th := range threads {
			order = append(order, step{th, n})
		}
	}
	boom := errors.New("no space left on device")
	for pos := range order {
		t.Run(fmt.Sprintf("fail %s%d", order[pos].thread, order[pos].n), func(t *testing.T) {
			var mu sync.Mutex
			stored := map[string][]int{}
			gate := make(chan struct{})
			commit := func(w []step) (int, error) {
				for _, s := range w {
					if s.thread == "gate" {
						<-gate
					}
					if s == order[pos] {
						return 1, boom // all or nothing, as a transaction
					}
				}
				mu.Lock()
				for _, s := range w {
					if s.thread != "gate" && s.thread != "" {
						stored[s.thread] = append(stored[s.thread], s.n)
					}
				}
				mu.Unlock()
				return 1, nil
			}
			join := func(ws [][]step) []step { return slices.Concat(ws...) }
			c := newCommitter(Batched, time.Hour, commit, func(error) bool { return true }, join, []step{})
			defer c.Close()
			d := Batched
			gated := make(chan error, 1)
			go func() { gated <- c.Submit([]step{{thread: "gate"}}, true) }()
			for c.Commits() == 0 && !c.busy() { // the gate's commit holds the writer
				time.Sleep(time.Millisecond)
			}
			for _, s := range order { // one group, queued behind the gate
				if err := c.Write(d, s.thread, "", []step{s}, false); err != nil {
					t.Fatalf("queueing %v: %v", s, err)
				}
			}
			close(gate)
			if err := <-gated; err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			failed := order[pos].thread
			mu.Lock()
			for _, th := range threads {
				want := []int{0, 1, 2, 3}
				if th == failed {
					want = want[:order[pos].n]
				}
				if !slices.Equal(stored[th], want) && !(len(want) == 0 && len(stored[th]) == 0) {
					t.Errorf("thread %s stored steps %v, want %v", th, stored[th], want)
				}
			}
			mu.Unlock()
			checkWritesAfterFailure(t, c, threads, failed, perThread, boom)
		})
	}
}
