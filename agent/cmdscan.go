package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
	"github.com/agent-lsp/agent-lsp/workspace/git"
)

// Files changed by commands (docs/rewind.md). Around each command the
// agent runs to its end, the files of its project (tracked and untracked,
// not ignored: Project.Files) are listed with their size, modification
// time and mode before it starts and after it ends; a file that appeared,
// went, or whose listing changed is read again and, when its content
// changed, recorded in the prompt's checkpoint like the agent's own edits.
// Its content before the command is known when the session's history holds
// the file (its text is read before the command starts) or when it was
// clean in git (git status did not list it: its HEAD blob is that content,
// read with the hardened runner of workspace/git); a file the command
// created is restored by deleting it. Any other is listed "changed by a
// command, not restorable". A project with more files than the scan limit
// is not scanned, and the checkpoint and the command's output say so.

// DefaultScanLimit is the number of files a project may have for a
// command's changes to be looked for (the rewind.scanLimit setting).
const DefaultScanLimit = 20000

// fileStat is what a scan compares of a file.
type fileStat struct {
	size  int64
	mtime int64
	mode  fs.FileMode
}

// errTooManyFiles ends a listing past the scan limit.
var errTooManyFiles = errors.New("too many files")

// commandScan is the look for the files one command changes: begun when
// its intent is recorded (right before it starts), finished after it ends.
// It is used by one goroutine at a time: the tool call's, then for a
// background process the one that ends it (bgscan.go).
type commandScan struct {
	rec     *historyRecorder
	project string // the project the command runs in (its name)
	line    string // the command line
	bg      bool   // a background process's (bgscan.go)
	handed  bool   // its process started: the process's end finishes it
	n       int    // the checkpoint current when it began, and its prompt's message
	msg     string

	p       *workspace.Project // set when begun
	limit   int
	skipped bool                // the project had more than limit files
	before  map[string]fileStat // rel -> its listing before
	known   map[string]string   // rel -> its text before, for the history's files
	dirty   map[string]bool     // rel -> git status listed it before (not clean)
	repo    *repoOf             // nil: not in a git repository
}

// repoOf is a project's git repository: prefix is the project's root
// below the repository's top ("" or ending in "/").
type repoOf struct {
	repo   *git.Repo
	prefix string
}

// scanLimit is the configured limit; 0: never scan.
func (rt *Runtime) scanLimit() int {
	switch {
	case rt.cfg.ScanLimit < 0:
		return 0
	case rt.cfg.ScanLimit == 0:
		return DefaultScanLimit
	}
	return rt.cfg.ScanLimit
}

// commandWatch returns the scan of a call run in project; nil (every
// method a no-op) when there is no history to record into.
func (rec *historyRecorder) commandWatch(project string) *commandScan {
	if rec == nil || rec.rt.scanLimit() == 0 {
		return nil
	}
	return &commandScan{rec: rec, project: project}
}

// port wraps a call's intent port: a command's intent, once recorded,
// begins the scan (a background process's ends when the process does).
func (s *commandScan) port(port func(context.Context, tools.Intent) error) func(context.Context, tools.Intent) error {
	if s == nil || port == nil {
		return port
	}
	return func(ctx context.Context, in tools.Intent) error {
		if err := port(ctx, in); err != nil {
			return err
		}
		if in.Command != "" && s.p == nil {
			s.bg = in.Background
			s.begin(ctx, in.Command)
		}
		return nil
	}
}

// begin lists the project's files before the command starts.
func (s *commandScan) begin(ctx context.Context, line string) {
	rec := s.rec
	p, ok := rec.rt.cfg.Workspace.Project(s.project)
	if !ok {
		return
	}
	if s.n, s.msg, ok = rec.current(); !ok {
		return
	}
	s.p, s.line, s.limit = p, line, rec.rt.scanLimit()
	rec.rt.scans.join(s)                   // before the listing: what another records from now on is not this one's
	dirty := make(chan map[string]bool, 1) // git status runs while the files are listed
	go func() {
		var d map[string]bool
		if s.repo = rec.repoFor(ctx, p); s.repo != nil {
			d = s.repo.dirty(ctx, p)
		}
		dirty <- d
	}()
	before, err := listFiles(ctx, p, s.limit, nil)
	s.dirty = <-dirty
	if errors.Is(err, errTooManyFiles) {
		s.skipped = true
		rec.rt.scans.leave(s)
		return
	}
	if err != nil {
		s.p = nil
		rec.rt.scans.leave(s)
		return
	}
	s.before = before
	s.known = map[string]string{}
	for _, path := range rec.historyPaths(ctx) {
		if q, ok := rec.rt.cfg.Workspace.ProjectFor(path); !ok || q != p {
			continue
		}
		rel := filepath.ToSlash(p.Rel(path))
		if _, listed := before[rel]; listed {
			if text, ok := readText(p, path); ok {
				s.known[rel] = text
			}
		}
	}
}

// listFiles lists p's files (Project.Files: not ignored, links as
// themselves); past limit files it ends with errTooManyFiles. visit, when
// given, sees each entry while the walk holds it (Entry.Open works).
func listFiles(ctx context.Context, p *workspace.Project, limit int, visit func(e workspace.Entry, st fileStat)) (map[string]fileStat, error) {
	out := map[string]fileStat{}
	err := p.Files(ctx, p.Root(), func(e workspace.Entry) error {
		if len(out) >= limit {
			return errTooManyFiles
		}
		fi, err := e.Lstat()
		if err != nil {
			return nil // gone since the folder was read
		}
		st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
		out[e.Rel] = st
		if visit != nil {
			visit(e, st)
		}
		return nil
	})
	return out, err
}

// readText reads a project file's text from disk (not the editor's
// buffer: commands see the disk), if it is a regular file of at most
// MaxReadSize bytes holding UTF-8.
func readText(p *workspace.Project, abs string) (string, bool) {
	f, size, err := p.OpenFile(abs)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := workspace.ReadLimited(f, p.Rel(abs), size, workspace.MaxReadSize, nil)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// cmdChange is a file a command changed.
type cmdChange struct {
	rel     string
	existed bool   // it was listed before the command
	exists  bool   // it is listed after
	after   []byte // its content after, when read
	read    bool   // after was read (a regular file within MaxReadSize)
}

// finish, after the call ran its command, lists the files again and
// records the changed ones in the prompt's checkpoint; a background
// process's are looked for when it ends (bgscan.go). It returns a note
// for the user when the scan was skipped.
func (s *commandScan) finish(ctx context.Context) string {
	if s == nil || s.p == nil {
		return ""
	}
	if s.skipped {
		what := "this command"
		if s.bg {
			what = "this background process"
		}
		note := fmt.Sprintf("files changed by %s were not looked for: project %s has more than %d files (the rewind.scanLimit setting), so a rewind cannot restore them", what, s.p.Name(), s.limit)
		s.rec.note(ctx, note)
		return note
	}
	if s.bg {
		if !s.handed { // it did not start
			s.rec.rt.scans.leave(s)
		}
		return ""
	}
	s.conclude(ctx)
	return ""
}

// conclude lists the files again after the command ended and records the
// changed ones in the checkpoint current when it began.
func (s *commandScan) conclude(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // a cancelled run's command changed files all the same
	var changes []cmdChange
	after, err := listFiles(ctx, s.p, int(^uint(0)>>1), func(e workspace.Entry, st fileStat) {
		if was, ok := s.before[e.Rel]; ok && was == st {
			return
		}
		_, existed := s.before[e.Rel]
		c := cmdChange{rel: e.Rel, existed: existed, exists: true}
		if st.mode.IsRegular() && st.size <= workspace.MaxReadSize {
			if f, err := e.Open(); err == nil {
				c.after, err = f.ReadAll(e.Rel, workspace.MaxReadSize, nil)
				c.read = err == nil
			}
		}
		changes = append(changes, c)
	})
	if err != nil {
		s.rec.rt.scans.leave(s)
		s.rec.rt.cfg.Log("rewind history of %s: files changed by %q: %v", s.rec.session, s.line, err)
		return
	}
	for rel := range s.before {
		if _, ok := after[rel]; !ok {
			changes = append(changes, cmdChange{rel: rel, existed: true})
		}
	}
	s.record(ctx, changes, after)
}

// record puts changes in the checkpoint, with their content before the
// command where it is known; of those another scan recorded while this
// one ran, only the ones changed again since (liveScans.settle).
func (s *commandScan) record(ctx context.Context, changes []cmdChange, after map[string]fileStat) {
	type found struct {
		c      cmdChange
		before string
		known  bool
	}
	var keep []found
	for _, c := range changes {
		f := found{c: c}
		if c.existed {
			f.before, f.known = s.earlier(ctx, c.rel)
			if f.known && c.read && f.before == string(c.after) {
				continue // touched, not changed
			}
		}
		keep = append(keep, f)
	}
	mine := s.rec.rt.scans.settle(s, len(keep), func(i int) string { return keep[i].c.rel }, after)
	if len(mine) == 0 {
		return
	}
	s.rec.update(ctx, s, func() {
		for _, i := range mine {
			s.rec.commandChange(ctx, s.p, keep[i].c, keep[i].before, keep[i].known)
		}
	})
}

// earlier is rel's text before the command, when known: the history's
// (read before it started), else HEAD's blob of a file git had clean.
func (s *commandScan) earlier(ctx context.Context, rel string) (string, bool) {
	if text, ok := s.known[rel]; ok {
		return text, true
	}
	if s.repo == nil || s.dirty == nil || s.dirty[rel] || !s.before[rel].mode.IsRegular() {
		return "", false
	}
	out, err := s.repo.repo.Run(ctx, s.p.WalkRoot(), "cat-file", "--filters", "HEAD:"+s.repo.prefix+rel)
	if err != nil || !utf8.ValidString(out) || int64(len(out)) != s.before[rel].size {
		return "", false // not in HEAD (ignored by git, not by us), binary, or not what was on disk
	}
	return out, true
}

// commandChange records one file a command changed; the caller holds mu.
func (rec *historyRecorder) commandChange(ctx context.Context, p *workspace.Project, c cmdChange, before string, known bool) {
	path := filepath.Join(p.Root(), filepath.FromSlash(c.rel))
	i, added := rec.file(p.Root(), c.rel)
	f := &rec.cur.Files[i]
	if added {
		switch {
		case !c.existed:
			f.Created = true
		case known:
			f.Before = rec.blob(ctx, before)
		default:
			f.Unknown = true
		}
		rec.before[path] = before
	}
	f.After = ""
	if c.exists {
		f.After = tools.Hash(string(c.after)) // (unread: what no readable file hashes to, so a rewind sees a conflict)
		if !c.read {
			f.After = tools.Hash("\x00unread " + c.rel)
		}
	}
	f.Added, f.Removed = 0, 0
	if c.read && utf8.Valid(c.after) {
		f.Added, f.Removed = lineChanges(rec.before[path], string(c.after))
	} else if !c.exists {
		_, f.Removed = lineChanges(rec.before[path], "")
	}
}

// current is the number of the checkpoint current now and its prompt's
// message; false when none is.
func (rec *historyRecorder) current() (int, string, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cur == nil {
		return 0, "", false
	}
	return rec.cur.N, rec.cur.Message, true
}

// note adds a note to the current checkpoint (and the log).
func (rec *historyRecorder) note(ctx context.Context, note string) {
	rec.rt.cfg.Log("rewind history of %s: %s", rec.session, note)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cur == nil {
		return
	}
	rec.cur.Notes = append(rec.cur.Notes, note)
	rec.put(ctx)
}

// historyPaths are the files the session's history holds: the earlier
// checkpoints' (read once per run) and the current one's.
func (rec *historyRecorder) historyPaths(ctx context.Context) []string {
	rec.mu.Lock()
	loaded := rec.earlierPaths != nil
	rec.mu.Unlock()
	if !loaded {
		paths := map[string]bool{}
		if cps, err := LoadCheckpoints(ctx, rec.rt.hist.History, rec.session); err == nil {
			for _, c := range cps {
				for _, f := range c.Files {
					paths[f.Path()] = true
				}
			}
		}
		rec.mu.Lock()
		if rec.earlierPaths == nil {
			rec.earlierPaths = paths
		}
		rec.mu.Unlock()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for path := range rec.earlierPaths {
		out = append(out, path)
	}
	if rec.cur != nil {
		for _, f := range rec.cur.Files {
			if !rec.earlierPaths[f.Path()] {
				out = append(out, f.Path())
			}
		}
	}
	return out
}

// repoFor is p's git repository (opened once per run), nil when p is in
// none.
func (rec *historyRecorder) repoFor(ctx context.Context, p *workspace.Project) *repoOf {
	rec.mu.Lock()
	r, ok := rec.repos[p.Root()]
	rec.mu.Unlock()
	if ok {
		return r
	}
	r = nil
	if repo, err := git.Open(ctx, p.WalkRoot(), nil); err == nil {
		if prefix, err := repo.Run(ctx, p.WalkRoot(), "rev-parse", "--show-prefix"); err == nil {
			r = &repoOf{repo: repo, prefix: strings.TrimSpace(prefix)}
		}
	}
	rec.mu.Lock()
	if rec.repos == nil {
		rec.repos = map[string]*repoOf{}
	}
	rec.repos[p.Root()] = r
	rec.mu.Unlock()
	return r
}

// dirty is what git status lists of p's tracked files (modified, staged,
// deleted, in conflict), relative to p's root; nil when it failed. An
// untracked file need not be listed: it is not in HEAD, so its HEAD
// content is not found (earlier).
func (r *repoOf) dirty(ctx context.Context, p *workspace.Project) map[string]bool {
	out, err := r.repo.Run(ctx, p.WalkRoot(), "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", "--", ".")
	if err != nil {
		return nil
	}
	dirty := map[string]bool{}
	for _, e := range strings.Split(out, "\x00") {
		if len(e) < 4 {
			continue
		}
		if rel, ok := strings.CutPrefix(e[3:], r.prefix); ok {
			dirty[rel] = true
		}
	}
	return dirty
}

// badName says why a file's name is not one a rewind writes or deletes
// (a control character: a newline would forge lines of listings and
// logs); "" when it is.
func badName(rel string) string {
	if i := strings.IndexFunc(rel, unicode.IsControl); i >= 0 {
		return fmt.Sprintf("its name %q holds a control character; not restored", rel)
	}
	return ""
}
