package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// A checkpoint that does not follow its thread's stored one is refused
// (an earlier step of its run was not stored: storing it would tear the
// thread's state), and so is every later write of its run.
func TestStepGapRefused(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for step := range 2 {
		if err := db.Put(ctx, Checkpoint{Thread: "t", Step: step, Status: StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	var gap *GapError
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 3, Status: StatusRunning}); !errors.As(err, &gap) || gap.Stored != 1 {
		t.Fatalf("a step after a gap: %v", err)
	}
	// The run's end is refused too: the run stopped at its failed write.
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusFailed}); !errors.As(err, &gap) {
		t.Fatalf("the end of the run whose write failed: %v", err)
	}
	if st, err := db.Load(ctx, "t", ""); err != nil || st.Step != 1 || st.Status != StatusRunning {
		t.Fatalf("stored: %+v %v", st, err)
	}
	// A run that resumes from what is stored goes on.
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 2, Status: StatusDone}); err != nil {
		t.Fatalf("the next run's step: %v", err)
	}
}
