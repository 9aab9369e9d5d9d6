package agent

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/store"
)

type recorder struct {
	mu   sync.Mutex
	seqs []int64
}

func (r *recorder) Deliver(_ []byte, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs = append(r.seqs, e.Seq)
}

func (r *recorder) got() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.seqs...)
}

// The registry numbers a session's events in one sequence across its runs;
// a live session's broadcaster gives each to every connection that follows
// the run (its own connection included), once however often it asked,
// until it leaves; the run's last events reach them after the run left the
// registry, and the session's next run starts with no followers.
func TestFollowersOfASession(t *testing.T) {
	reg := NewRegistry()
	runner, follower, late := &recorder{}, &recorder{}, &recorder{}
	if reg.Follow("s", follower) != nil {
		t.Fatal("followed a session that is not running")
	}
	_, _, end, err := reg.register(context.Background(), store.Session{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	run := reg.Follow("s", runner)
	reg.Follow("s", follower)
	reg.Follow("s", follower)
	publish := func(b *Broadcast) {
		b.Publish(event.Event{Session: "s", Seq: reg.Seq("s"), Data: event.RunEnd{Status: "done"}})
	}
	publish(run)
	publish(run)
	reg.Forget(follower) // its connection closed
	publish(run)
	end()
	publish(run) // the run's end, published after it left the registry
	_, _, end, err = reg.register(context.Background(), store.Session{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	next := reg.Follow("s", late)
	publish(next)
	if got := runner.got(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("the run's own connection got seqs %v, want [1 2 3 4]", got)
	}
	if got := follower.got(); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("the follower got seqs %v, want [1 2]", got)
	}
	if got := late.got(); !slices.Equal(got, []int64{5}) {
		t.Errorf("the next run's follower got seqs %v, want [5]", got)
	}
}
