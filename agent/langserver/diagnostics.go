package langserver

import (
	"context"
	"sort"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// settledLocked says whether the diagnostics of mk's file reflect the text
// mk sent: the server published them for that version, or (a server that
// names no version) published after the text was sent and then kept quiet
// about the file for a moment. A file whose text did not change is
// settled. retry is when to look again for a quiet period. s.mu is held.
func (s *server) settledLocked(mk mark) (ok bool, retry time.Time) {
	if !mk.changed {
		return true, time.Time{}
	}
	fd := s.diags[mk.path]
	switch {
	case fd == nil:
		return false, time.Time{}
	case fd.version != nil:
		return *fd.version >= mk.version, time.Time{}
	case !fd.at.After(mk.at):
		return false, time.Time{}
	case time.Since(fd.at) >= quiet:
		return true, time.Time{}
	}
	return false, fd.at.Add(quiet)
}

// settle waits until every mark's diagnostics reflect its text, or
// deadline. When the time runs out, a file of a server that names no
// version and had no problems counts as settled: such servers may publish
// nothing when a clean file stays clean.
func (s *server) settle(ctx context.Context, marks []mark, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.state != ready {
			s.mu.Unlock()
			return false
		}
		all := true
		var retry time.Time
		for _, mk := range marks {
			ok, r := s.settledLocked(mk)
			all = all && ok
			if !r.IsZero() && (retry.IsZero() || r.Before(retry)) {
				retry = r
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if all {
			return true
		}
		var again <-chan time.Time
		if !retry.IsZero() {
			again = time.After(time.Until(retry))
		}
		select {
		case <-ch:
		case <-again:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return s.cleanUnversioned(marks)
		}
	}
}

// cleanUnversioned: every mark not settled is of a file whose last
// diagnostics, named with no version, were empty.
func (s *server) cleanUnversioned(marks []mark) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, mk := range marks {
		if ok, _ := s.settledLocked(mk); ok {
			continue
		}
		if fd := s.diags[mk.path]; fd == nil || fd.version != nil || len(fd.items) > 0 {
			return false
		}
	}
	return true
}

// quietProject waits, up to deadline, until the server of a project that
// just started has published its first diagnostics and kept quiet for a
// second.
func (s *server) quietProject(ctx context.Context, deadline time.Time) {
	const calm = time.Second
	last := time.Now()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			last = time.Now()
		case <-time.After(time.Until(last.Add(calm))):
			return
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// pulls reports whether the server answers textDocument/diagnostic.
func (s *server) pulls() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pull && s.spec.Pull == ""
}

// pullDiagnostics asks the server for the diagnostics of each changed
// file (LSP 3.17's pull model) and keeps them as published for its
// version; false when one did not come by deadline.
func (s *server) pullDiagnostics(ctx context.Context, marks []mark, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ok := true
	for _, mk := range marks {
		s.mu.Lock()
		conn, gen := s.conn, s.gen
		s.mu.Unlock()
		if conn == nil {
			return false
		}
		var res struct {
			Kind  string           `json:"kind"`
			Items []wireDiagnostic `json:"items"`
		}
		params := map[string]any{"textDocument": map[string]string{"uri": string(uri.File(mk.path))}}
		if _, err := conn.Call(ctx, "textDocument/diagnostic", params, &res); err != nil {
			ok = false
			continue
		}
		if res.Kind != "full" {
			continue // unchanged: what the server gave before stands
		}
		items := make([]tools.Diagnostic, 0, min(len(res.Items), maxPerFile))
		for i, w := range res.Items {
			if i == maxPerFile {
				break
			}
			items = append(items, w.diagnostic())
		}
		v := mk.version
		s.keep(gen, mk.path, items, len(res.Items), &v, true)
	}
	return ok
}

// report is the server's diagnostics of its project, files in path order.
func (s *server) report(settled bool) tools.LangReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := tools.LangReport{Server: s.spec.Name, Encoding: s.enc, Settled: settled}
	for path, fd := range s.diags {
		if len(fd.items) > 0 {
			rep.Files = append(rep.Files, tools.FileDiagnostics{Path: path, Items: append([]tools.Diagnostic(nil), fd.items...)})
		}
	}
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Path < rep.Files[j].Path })
	return rep
}
