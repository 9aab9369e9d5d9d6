package postgres

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// machineID names where a process's pids mean what they say: the kernel's
// boot (/proc/sys/kernel/random/boot_id) and the PID namespace (its
// inode). Two processes with the same machineID see the same pid for the
// same process. "" when unknown.
func machineID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%s/pidns:%d", strings.TrimSpace(string(boot)), st.Ino)
}

// processStart is a process's start time (clock ticks after boot, field 22
// of /proc/PID/stat), which tells it from a later process given the same
// pid; ok is false when there is no such process.
func processStart(pid int) (start int64, ok bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')') // the command may hold spaces and parentheses
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:])) // from field 3 (state) on
	if len(fields) < 20 {
		return 0, false
	}
	start, err = strconv.ParseInt(fields[19], 10, 64)
	return start, err == nil
}
