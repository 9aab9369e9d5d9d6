package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Files changed by background processes (docs/rewind.md). A background
// process (run_command {background: true}) is scanned like a command run
// to its end: its project is listed when its intent is recorded, right
// before it starts, and again when it has ended (it exited, was stopped,
// or ended with its run, its linger or the run that took it over), in the
// goroutine that ends it, before anything sees it end. Its changes go to
// the checkpoint that was current when it started, even when later
// prompts have begun since, or the run is over (then to the stored
// checkpoint, if a rewind has not taken it out of the history).
//
// Scans that overlap (a command run while a background process runs, two
// background processes) would each see the other's changes as their own:
// a file is recorded by the first scan to see it changed; another scan of
// the session that was under way then leaves it out, unless the file
// changed again after that (liveScans).

// scanWait bounds how long a run's end waits for the scans of background
// processes that have ended; one still going then is abandoned, and its
// checkpoint says so.
const scanWait = 30 * time.Second

// liveScans are the command scans under way (begun, not yet recorded) of
// a runtime's sessions.
type liveScans struct {
	mu sync.Mutex // guards live
	// live maps each scan under way to the files other scans of its
	// session recorded since it began: absolute path -> its state then.
	live map[*commandScan]map[string]scanState
}

// scanState is a file's listing, or that it was gone.
type scanState struct {
	exists bool
	st     fileStat
}

// join adds s, about to list its files.
func (l *liveScans) join(s *commandScan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live == nil {
		l.live = map[*commandScan]map[string]scanState{}
	}
	l.live[s] = map[string]scanState{}
}

// leave removes s, which records nothing.
func (l *liveScans) leave(s *commandScan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.live, s)
}

// settle removes s, which is about to record the n files rel names (after
// is its last listing), and returns the indexes of those it records: all
// but the ones another scan recorded while s ran and that have not
// changed since. The other scans of the session under way learn of them.
func (l *liveScans) settle(s *commandScan, n int, rel func(int) string, after map[string]fileStat) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.live[s]
	delete(l.live, s)
	var mine []int
	for i := range n {
		st, exists := after[rel(i)]
		now := scanState{exists: exists, st: st}
		path := filepath.Join(s.p.Root(), filepath.FromSlash(rel(i)))
		if was, ok := seen[path]; ok && was == now {
			continue // the other scan saw it first
		}
		mine = append(mine, i)
		for o, others := range l.live {
			if o.rec.session == s.rec.session {
				others[path] = now
			}
		}
	}
	return mine
}

// attach gives env, a call's, its intent port (port, the scan begun when
// a command's intent is recorded) and, for a background process it starts,
// the scan's end when the process ends (watch).
func (s *commandScan) attach(env *tools.Env, port func(context.Context, tools.Intent) error) {
	env.Intent = s.port(port)
	if s != nil {
		env.WatchBackground = s.watch
	}
}

// watch is the scan's tools.Env.WatchBackground: the process started, and
// ended (the func returned) finishes the scan when it has ended.
func (s *commandScan) watch() func() {
	if s.p == nil || s.skipped || !s.bg {
		return nil
	}
	s.handed = true
	return s.ended
}

// ended looks for the files the background process changed; it runs in
// the goroutine that ended the process. The run's end waits for it
// (historyRecorder.settle).
func (s *commandScan) ended() {
	rec := s.rec
	rec.mu.Lock()
	if rec.scanning == nil {
		rec.scanning = map[*commandScan]bool{}
	}
	rec.scanning[s] = false
	rec.mu.Unlock()
	s.conclude(context.Background())
	rec.mu.Lock()
	delete(rec.scanning, s)
	if len(rec.scanning) == 0 && rec.idle != nil {
		close(rec.idle)
		rec.idle = nil
	}
	rec.mu.Unlock()
}

// settle ends the run's history: it waits (at most scanWait) for the scans
// of background processes that ended; one still going is abandoned and
// its checkpoint says so. The processes that outlive the run (lingering)
// record into the stored checkpoints when they end.
func (rec *historyRecorder) settle(ctx context.Context) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	var idle chan struct{}
	if len(rec.scanning) > 0 {
		if rec.idle == nil {
			rec.idle = make(chan struct{})
		}
		idle = rec.idle
	}
	rec.mu.Unlock()
	if idle != nil {
		t := time.NewTimer(scanWait)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.ended = true
	for s, abandoned := range rec.scanning {
		if abandoned {
			continue
		}
		rec.scanning[s] = true
		note := fmt.Sprintf("files changed by the background process %q were not looked for: the look took longer than %s after the run ended, so a rewind cannot restore them", tools.Clip(s.line, 200), scanWait)
		rec.logLine(note)
		rec.updateLocked(ctx, s.n, s.msg, func() { rec.cur.Notes = append(rec.cur.Notes, note) })
	}
}

// logLine logs a line of the session's history.
func (rec *historyRecorder) logLine(line string) {
	rec.rt.cfg.Log("rewind history of %s: %s", rec.session, line)
}

// update runs fn on the checkpoint s began in and stores it; nothing when
// s was abandoned (settle).
func (rec *historyRecorder) update(ctx context.Context, s *commandScan, fn func()) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.scanning[s] {
		return
	}
	rec.updateLocked(ctx, s.n, s.msg, fn)
}

// updateLocked runs fn with cur set to checkpoint n, whose prompt is the
// message msg, and stores it: the current one while the run goes, else
// the stored one (none when a rewind took it out of the history: fn does
// not run). The caller holds mu.
func (rec *historyRecorder) updateLocked(ctx context.Context, n int, msg string, fn func()) {
	if rec.cur != nil && rec.cur.N == n && !rec.ended {
		fn()
		rec.put(ctx)
		return
	}
	entries, err := rec.rt.hist.Entries(context.WithoutCancel(ctx), rec.session)
	if err != nil {
		rec.logLine(err.Error())
		return
	}
	var c Checkpoint
	if body, ok := entries[n]; !ok || json.Unmarshal(body, &c) != nil || c.Message != msg {
		rec.logLine(fmt.Sprintf("checkpoint %d is gone from the history (rewound): a background process's files are not recorded", n))
		return
	}
	c.N = n
	cur, before := rec.cur, rec.before
	rec.cur, rec.before = &c, rec.textsBefore(ctx, c)
	fn()
	rec.put(ctx)
	rec.cur, rec.before = cur, before
}

// textsBefore are the texts before checkpoint c of its files, as far as
// the history holds them: a file's line counts are against them.
func (rec *historyRecorder) textsBefore(ctx context.Context, c Checkpoint) map[string]string {
	out := map[string]string{}
	blobs, err := rec.rt.hist.LoadBlobs(context.WithoutCancel(ctx), rec.session)
	if err != nil {
		return out
	}
	for _, f := range c.Files {
		if b, err := blobs.Get(f.Before); err == nil && !f.Created && !f.Unknown {
			out[f.Path()] = string(b)
		}
	}
	return out
}
