package sandbox

import (
	"strings"
	"testing"
)

// TestJobLimits: the Job Object's bounds come from the policy: its
// processes (the helper besides) and memory, or three quarters of the
// machine's.
func TestJobLimits(t *testing.T) {
	for _, tt := range []struct {
		o        opts
		physical uint64
		want     jobLimit
	}{
		{opts{nproc: 64, memory: 1 << 30}, 16 << 30, jobLimit{ActiveProcesses: 65, JobMemory: 1 << 30}},
		{opts{nproc: 64}, 16 << 30, jobLimit{ActiveProcesses: 65, JobMemory: 12 << 30}},
		{opts{nproc: 64}, 0, jobLimit{ActiveProcesses: 65}},
		{opts{}, 8 << 30, jobLimit{ActiveProcesses: uint32(DefaultMaxProcs()) + 1, JobMemory: 6 << 30}},
	} {
		if got := jobLimits(&tt.o, tt.physical); got != tt.want {
			t.Errorf("jobLimits(%+v, %d) = %+v, want %+v", tt.o, tt.physical, got, tt.want)
		}
	}
}

// TestJobWiring: a command held in a Job Object (Windows) gets the policy's
// bounds on the helper's command line, and no snapshot or read-only list
// (nothing confines its writes).
func TestJobWiring(t *testing.T) {
	s := &Sandbox{helper: "/agent-lsp"}
	p := Policy{Mode: WorkspaceWrite, Root: t.TempDir(), MaxProcs: 32, MaxMemory: 2 << 30}
	r := &Run{s: s, p: p, iso: None}
	o, err := parseOpts(s.opts(r, []string{"cmd", "/c", "dir"}, false).commandLine(s.helper)[2:])
	if err != nil {
		t.Fatal(err)
	}
	if o.stage != stageJob || r.before != nil {
		t.Errorf("stage %s, snapshot %v", o.stage, r.before != nil)
	}
	want := jobLimit{ActiveProcesses: 33, JobMemory: 2 << 30}
	if got := jobLimits(o, 64<<30); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	if d := describeJob(p); !strings.Contains(d, "at most 32 processes") || !strings.Contains(d, "2048 MiB") {
		t.Errorf("describeJob: %q", d)
	}
}
