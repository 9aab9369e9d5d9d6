package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// runHelper runs Windows's stages: the command in a Job Object (with a
// restricted token when o.token), or the restricted token's probe.
func runHelper(o *opts) error {
	switch o.stage {
	case stageJob:
		return runJob(o)
	case stageProbe:
		return tokenProbe(o)
	}
	return fmt.Errorf("stage %q runs only on Linux", o.stage)
}

// runJob makes a Job Object with o's bounds that kills its processes when
// its last handle closes, joins it, runs o's command (which lands in it,
// with every process it starts), and exits as the command did: exiting
// closes the job's one handle, which kills every process the command left.
// The server killing this helper does the same. With o.token the command
// runs with a write-restricted token (wintoken_windows.go); when that
// cannot be set up the command does not run.
func runJob(o *opts) error {
	job, err := newJob(jobLimits(o, physicalMemory()))
	if err != nil {
		return err
	}
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		return fmt.Errorf("join the Job Object: %w", err)
	}
	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = o.env()
	if o.token {
		tok, err := confineWrites(o)
		if err != nil {
			return fmt.Errorf("confine the command's writes: %w", err)
		}
		defer tok.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{Token: syscall.Token(tok)}
	}
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		return fmt.Errorf("run %s: %w", o.argv[0], err)
	}
	os.Exit(cmd.ProcessState.ExitCode())
	return nil
}

// newJob makes a Job Object enforcing l, killing its processes when its
// last handle closes and when one of them fails with an unhandled exception
// (instead of a dialog that waits for a user).
func newJob(l jobLimit) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create a Job Object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION |
		windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
	info.BasicLimitInformation.ActiveProcessLimit = l.ActiveProcesses
	if l.JobMemory > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(min(l.JobMemory, uint64(^uintptr(0))))
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("set the Job Object's limits: %w", err)
	}
	return job, nil
}

// memoryStatusEx is Windows's MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// physicalMemory is the machine's memory in bytes; 0 when Windows does not
// say.
func physicalMemory() uint64 {
	st := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if r, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&st))); r == 0 {
		return 0
	}
	return st.totalPhys
}
