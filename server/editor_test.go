//go:build unix

package server

import (
	"context"
	"testing"
	"time"
)

// The confirmation queue hands the lock on in the order it was asked for,
// and each holder learns how many wait behind it.
func TestFifoOrderAndPositions(t *testing.T) {
	var f fifo
	if behind, err := f.lock(context.Background()); err != nil || behind != 0 {
		t.Fatalf("first lock: %d %v", behind, err)
	}
	waiting := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting)
	}
	type grant struct{ who, behind int }
	granted := make(chan grant)
	for who := 1; who <= 3; who++ {
		go func() {
			behind, _ := f.lock(context.Background())
			granted <- grant{who, behind}
		}()
		for deadline := time.Now().Add(time.Minute); waiting() != who; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d never queued", who)
			}
		}
	}
	// One gives up while waiting: the line closes up behind it.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() { _, err := f.lock(ctx); gaveUp <- err }()
	for deadline := time.Now().Add(time.Minute); waiting() != 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fourth waiter never queued")
		}
	}
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a cancelled wait got the lock")
	}
	for want := 1; want <= 3; want++ {
		f.unlock()
		if g := <-granted; g.who != want || g.behind != 3-want {
			t.Fatalf("granted %+v, want waiter %d with %d behind", g, want, 3-want)
		}
	}
	f.unlock()
	if behind, err := f.lock(context.Background()); err != nil || behind != 0 {
		t.Fatalf("lock after all: %d %v", behind, err)
	}
}
