package sandbox

import (
	"fmt"
	"runtime"
)

// Windows holds every command in a Job Object (job_windows.go): the helper
// makes a job that kills every process in it when its last handle closes,
// bounds the number of its processes and their committed memory, joins it,
// and runs the command, whose processes all land in the job. When the
// helper ends (the command ended, or the helper was killed), so does every
// process the command left. Writes are not confined on Windows (no
// restricted token or AppContainer yet), so Confines is false there and
// every command asks, the project's build and test included.

// jobs: this platform holds commands in Job Objects.
const jobs = runtime.GOOS == "windows"

// stageJob is the helper's stage on Windows: it runs the command in a Job
// Object.
const stageJob stage = "job"

// jobLimit is what a command's Job Object enforces.
type jobLimit struct {
	// ActiveProcesses bounds the processes in the job at once, the helper
	// included.
	ActiveProcesses uint32
	// JobMemory bounds the committed memory of all the job's processes
	// together, in bytes; 0: no bound.
	JobMemory uint64
}

// jobLimits computes the job's bounds from the helper's options: o.nproc
// processes (DefaultMaxProcs when 0) besides the helper, and o.memory bytes
// of memory, or three quarters of physical (the machine's memory in bytes;
// 0 when unknown: then no memory bound).
func jobLimits(o *opts, physical uint64) jobLimit {
	n := o.nproc
	if n <= 0 {
		n = DefaultMaxProcs()
	}
	l := jobLimit{ActiveProcesses: uint32(min(n, 1<<30)) + 1}
	switch {
	case o.memory > 0:
		l.JobMemory = uint64(o.memory)
	case physical > 0:
		l.JobMemory = physical / 4 * 3
	}
	return l
}

// describeJob is what bounds a command's processes under p in a Job
// Object (Report.Processes). The report's Enforced stays empty on Windows:
// nothing confines what a command reaches, and clients say "not
// sandboxed" from it.
func describeJob(p Policy) string {
	mem := "three quarters of the machine's memory"
	if p.MaxMemory > 0 {
		mem = fmt.Sprintf("%d MiB of memory", p.MaxMemory>>20)
	}
	return fmt.Sprintf("Job Object: no process outlives the command; at most %d processes and %s together", p.maxProcs(), mem)
}
