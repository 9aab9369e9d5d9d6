package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Run is one command confined under a policy: made by Command, finished by
// Finish once the command was waited for.
type Run struct {
	s       *Sandbox
	p       Policy
	iso     Isolation
	before  *scan  // the project's .git and protected paths at the start
	cgroup  string // the command's pids cgroup, removed by Finish
	entered bool   // counted in the guard (snapshot)
}

// Inspection is what a project's protected paths look like before a
// command.
type Inspection struct {
	// HardLinks are protected files (git metadata included) with more than
	// one link: a command could change them through another name, which no
	// mount and no restore sees, so commands ask.
	HardLinks []string
	// Truncated: the project is too big to look for every nested .git and
	// protected path (the bounds of a scan); deeper ones are not protected.
	Truncated bool
}

// Inspect looks at the project's protected paths under p.
func (s *Sandbox) Inspect(p Policy) Inspection {
	if s.Isolation(p) == None || p.Mode != WorkspaceWrite {
		return Inspection{}
	}
	sc := s.index.refresh(p.Root)
	return Inspection{HardLinks: hardLinks(p.Root, sc, p), Truncated: sc.truncated}
}

// Command returns the command that runs argv under p (the caller sets its
// Dir, which must be p.Root, Env and output) and the Run to Finish after
// waiting for it. Cancelling ctx ends every process of the command.
func (s *Sandbox) Command(ctx context.Context, p Policy, argv []string) (*exec.Cmd, *Run) {
	r := &Run{s: s, p: p, iso: s.Isolation(p)}
	o := s.opts(r, argv, true)
	cmd := exec.CommandContext(ctx, s.helper, o.commandLine(s.helper)[1:]...)
	switch r.iso {
	case Namespaces:
		cmd.SysProcAttr = nsAttr(o.netns)
		// The namespace ends with its init: nothing is left behind.
		cmd.Cancel = func() error { return cmd.Process.Kill() }
		cmd.WaitDelay = time.Second
	default:
		cmd.SysProcAttr = sessionAttr()
		// The reaper kills what the command left, then exits; it is killed
		// only if it does not in time.
		cmd.Cancel = func() error { return terminate(cmd) }
		cmd.WaitDelay = 10 * time.Second
	}
	return cmd, r
}

// opts prepares what the command needs and makes the helper's options;
// direct says the helper is started here (Command), not by a caller that
// only has its command line (Argv: it makes its own cgroup, and nothing is
// restored after it).
func (s *Sandbox) opts(r *Run, argv []string, direct bool) *opts {
	p := r.p
	o := &opts{root: p.Root, write: p.WritableDirs(), network: p.Network, tmpSize: p.tempSize(), memory: p.MaxMemory, argv: argv}
	if p.Mode == WorkspaceWrite && r.iso != None {
		for _, c := range p.Caches {
			os.MkdirAll(c, 0o755) // a cache a build has not made yet must exist to be writable
		}
		if p.GoCache != "" && prepareGoCache(p.GoCache) == nil {
			o.gocache = p.GoCache
		}
		r.before = s.index.refresh(p.Root)
	}
	o.nproc = p.maxProcs()
	if direct {
		if dir, _ := s.cgroups.create(p.maxProcs()); dir != "" {
			o.cgroup, r.cgroup = dir, dir
			if os.Getuid() == 0 {
				o.nproc = 0 // root ignores RLIMIT_NPROC
			}
		}
	}
	switch r.iso {
	case None: // a Job Object holds the command (Holds), nothing confines it
		o.stage = stageJob
	case RestrictedToken: // a Job Object holds it, a restricted token confines its writes
		o.stage, o.token = stageJob, true
		if r.before != nil {
			b := bindsFor(r.before, p)
			o.ro, o.roAbs, o.pin, o.links = b.ro, b.roAbs, b.pins, linksFor(r.before, p)
		}
	case Seatbelt:
		o.stage = stageSeatbelt
		if r.before != nil {
			b := bindsFor(r.before, p)
			o.ro, o.roAbs, o.pin = b.ro, b.roAbs, b.pins
		}
	case Namespaces:
		o.stage, o.netns, o.server = stageNS, !p.Network, os.Getpid()
		if p.Temp != "" && filepath.Clean(p.Temp) != "/tmp" {
			o.temps = []string{filepath.Clean(p.Temp)}
		}
		if r.before != nil {
			b := bindsFor(r.before, p)
			o.ro, o.roAbs, o.pin = b.ro, b.roAbs, b.pins
		}
	default:
		o.stage = stageReaper
		if r.before != nil && direct {
			s.guard.enter(p.Root, func() *snapshot { return takeSnapshot(r.before, p) })
			r.entered = true
		}
	}
	return o
}

// ReadOnly lists the paths of the project (relative, slash-separated) that
// the command could not write: every .git and protected path.
func (r *Run) ReadOnly() []string {
	if r.before == nil || (r.iso != Namespaces && r.iso != Seatbelt && r.iso != RestrictedToken) {
		return nil
	}
	return bindsFor(r.before, r.p).ro
}

// Isolation is the mechanism that confined the command.
func (r *Run) Isolation() Isolation { return r.iso }

// Finish settles the project after the command ended and every process of
// it is gone: it removes the command's pids cgroup, removes protected paths
// the command created, and (snapshot) restores the snapshot when no other
// command of the project runs.
func (r *Run) Finish() Outcome {
	r.s.cgroups.remove(r.cgroup)
	if r.before == nil {
		return Outcome{}
	}
	after := r.s.index.refresh(r.p.Root)
	if r.entered {
		return r.s.guard.leave(r.p.Root, after, r.p)
	}
	return settle(r.p.Root, r.before, after, r.p)
}

// Argv returns the command line that runs argv under p, for a caller that
// can only change a command line (MCP servers): argv itself when nothing
// confines it, else the helper, which sets the namespaces (or the reaper)
// and a pids cgroup up itself. Such a command gets no snapshot.
func (s *Sandbox) Argv(p Policy, argv ...string) []string {
	if !s.Confines(p) {
		return argv
	}
	r := &Run{s: s, p: p, iso: s.Isolation(p)}
	o := s.opts(r, argv, false)
	if r.iso != Seatbelt && r.iso != RestrictedToken { // these helpers are their own reapers
		o.next, o.stage = o.stage, stageSpawn
	}
	return o.commandLine(s.helper)
}
