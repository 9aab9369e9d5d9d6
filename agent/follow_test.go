package agent

import (
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
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

// The registry's broadcaster: a session's events are numbered in one
// sequence across its runs; a follower gets them, but not the connection
// that made them, until the run ends or it leaves.
func TestFollowersOfASession(t *testing.T) {
	reg := NewRegistry()
	runner, follower, other := &recorder{}, &recorder{}, &recorder{}
	reg.Follow("s", follower)
	reg.Follow("s", runner)
	reg.Follow("t", other)
	publish := func(session string) {
		e := event.Event{Session: session, Data: event.RunEnd{Status: "done"}}
		e.Seq = reg.Seq(session)
		reg.Publish(e, runner)
	}
	publish("s")
	publish("s")
	reg.Ended("s") // the run ended: its followers stop
	publish("s")
	reg.Follow("s", follower) // the next run
	publish("s")
	reg.Forget(follower) // its connection closed
	publish("s")
	if got := follower.got(); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Errorf("the follower got seqs %v, want [1 2 4]", got)
	}
	if got := runner.got(); len(got) != 0 {
		t.Errorf("the connection whose run made the events got them again: %v", got)
	}
	if got := other.got(); len(got) != 0 {
		t.Errorf("a follower of another session got %v", got)
	}
}
