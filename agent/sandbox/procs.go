package sandbox

// proc names one process: its pid and start time (a pid is reused).
type proc struct {
	pid   int
	start int64 // µs since the epoch
}

// procInfo is one row of the process table.
type procInfo struct {
	proc
	ppid int
	sid  int // its session (0: not known)
}

// commandProcs finds the processes of a command in table, for macOS's
// helper (seatbelt_darwin.go), which has no subreaper or PID namespace:
// the descendants of the helper (self), the members of its session (sid,
// when the helper leads one; 0 otherwise), and those seen earlier (seen,
// updated: what is found is added, what ended is removed) with their own
// descendants, so that a process that left the session and lost its
// parent is still found if it was seen once. The helper itself and pid 1
// are never among them.
func commandProcs(table []procInfo, self, sid int, seen map[proc]bool) []proc {
	alive := map[int]proc{}
	children := map[int][]int{}
	queue := []int{self}
	for _, pi := range table {
		alive[pi.pid] = pi.proc
		children[pi.ppid] = append(children[pi.ppid], pi.pid)
		if sid != 0 && pi.sid == sid {
			queue = append(queue, pi.pid)
		}
	}
	for p := range seen {
		if alive[p.pid] == p {
			queue = append(queue, p.pid)
		} else {
			delete(seen, p) // ended (or its pid was reused)
		}
	}
	var out []proc
	done := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if done[pid] {
			continue
		}
		done[pid] = true
		queue = append(queue, children[pid]...)
		if p, ok := alive[pid]; ok && pid != self && pid > 1 {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
