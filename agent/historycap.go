package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// The size cap of a session's rewind history (Config.MaxHistoryBytes,
// the rewind.maxHistoryMB setting): as each run begins (its first
// prompt's checkpoint: counting the history reads the whole of it, so a
// run's queued prompts do not count it again), a history over the cap
// loses its oldest parts first until it fits:
// contents no checkpoint or branch names any more, then, oldest first, the
// contents only a checkpoint (or a rewind's branch) names, and last, if it
// still does not fit, the oldest checkpoints' entries themselves. A
// checkpoint whose earlier contents are gone lists its files with
// ReasonPruned, and a rewind of its files is refused before anything
// changes. The size is counted from what the store holds
// (store.History.Usage), so it is right after a crash: once per session
// in a process, and again only when what this runtime wrote since
// (historySizes, an upper bound) could have crossed the cap. Another
// process writing the same session (another daemon client has its own
// Runtime) is only seen at this runtime's next count, so the cap is a
// bound checked as runs start, not a hard limit.

// historyPart is a checkpoint or a branch of the history, as the cap sees it.
type historyPart struct {
	time   time.Time
	n      int    // a checkpoint's number; 0 for a branch
	branch string // a branch's ID
	hashes []string
}

// prune keeps the session's history within the cap; the caller holds mu.
func (rec *historyRecorder) prune(ctx context.Context, entries map[int]json.RawMessage) {
	limit := rec.rt.cfg.MaxHistoryBytes
	if limit <= 0 {
		return
	}
	h := rec.rt.hist
	if h.sizes.below(rec.session, limit) {
		return // counted before, and what this runtime wrote since fits
	}
	start := h.sizes.counting(rec.session)
	u, err := h.Usage(ctx, rec.session)
	if err != nil {
		h.sizes.forget(rec.session)
		rec.rt.cfg.Log("rewind history of %s: %v", rec.session, err)
		return
	}
	if u.Total() <= limit {
		h.sizes.counted(rec.session, u.Total(), start)
		return
	}
	total := u.Total()
	cut := planPrune(u, rec.parts(ctx, entries), limit)
	for _, hash := range cut.blobs {
		delete(rec.stored, hash) // stored again if a later change needs it
	}
	ctx = context.WithoutCancel(ctx)
	err = h.DeleteBlobs(ctx, rec.session, cut.blobs, rec.d)
	if err == nil {
		err = h.DeleteBranches(ctx, rec.session, cut.branches, rec.d)
	}
	if err == nil {
		err = h.DeleteEntries(ctx, rec.session, cut.entries, rec.d)
	}
	if err != nil {
		h.sizes.forget(rec.session)
		rec.rt.cfg.Log("rewind history of %s: pruning: %v", rec.session, err)
		return
	}
	h.sizes.counted(rec.session, u.Total(), start)
	rec.rt.cfg.Log("rewind history of %s: %d bytes, over the cap of %d (rewind.maxHistoryMB): pruned to %d, oldest first: %d contents, %d branches, %d checkpoints",
		rec.session, total, limit, u.Total(), len(cut.blobs), len(cut.branches), len(cut.entries))
}

// parts are the session's checkpoints and branches, oldest first.
func (rec *historyRecorder) parts(ctx context.Context, entries map[int]json.RawMessage) []historyPart {
	var out []historyPart
	for n, body := range entries {
		var c Checkpoint
		if json.Unmarshal(body, &c) != nil {
			continue // a damaged entry names nothing: what only it named goes first
		}
		out = append(out, historyPart{time: c.Time, n: n, hashes: c.hashes()})
	}
	branches, err := rec.rt.hist.Branches(ctx, rec.session)
	if err != nil {
		rec.rt.cfg.Log("rewind history of %s: %v", rec.session, err)
	}
	for id, body := range branches {
		var b branch
		if json.Unmarshal(body, &b) != nil {
			out = append(out, historyPart{branch: id})
			continue
		}
		p := historyPart{time: b.Time, branch: id}
		for _, c := range b.Entries {
			p.hashes = append(p.hashes, c.hashes()...)
		}
		for _, f := range b.Files {
			p.hashes = append(p.hashes, f.Before, f.After)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b historyPart) int {
		return cmp.Or(a.time.Compare(b.time), cmp.Compare(a.n, b.n), cmp.Compare(a.branch, b.branch))
	})
	return out
}

// hashes are the contents c names.
func (c Checkpoint) hashes() []string {
	var out []string
	for _, f := range c.Files {
		out = append(out, f.Before, f.After)
	}
	return out
}

// pruneCut is what the cap removes.
type pruneCut struct {
	blobs    []string
	branches []string
	entries  []int
}

// planPrune chooses what to remove from a history of usage u made of
// parts (oldest first) for it to fit in limit bytes; u is left as it will be.
func planPrune(u store.HistoryUsage, parts []historyPart, limit int64) pruneCut {
	var cut pruneCut
	total := u.Total()
	refs := map[string]int{}
	for _, p := range parts {
		for _, h := range p.hashes {
			refs[h]++
		}
	}
	drop := func(h string) {
		if size, held := u.Blobs[h]; held {
			cut.blobs = append(cut.blobs, h)
			total -= int64(size)
			delete(u.Blobs, h)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(u.Blobs)) {
		if refs[h] == 0 {
			drop(h) // named by nothing: left by a crash between a content and its entry
		}
	}
	for _, p := range parts {
		if total <= limit {
			return cut
		}
		for _, h := range p.hashes {
			if refs[h]--; refs[h] == 0 {
				drop(h)
			}
		}
		if p.branch != "" {
			cut.branches = append(cut.branches, p.branch)
			total -= int64(u.Branches[p.branch])
			delete(u.Branches, p.branch)
		}
	}
	newest := 0
	for _, p := range parts {
		newest = max(newest, p.n)
	}
	for _, p := range parts {
		if total <= limit {
			break
		}
		if p.n > 0 && p.n != newest { // the newest stays: the next prompt's number follows it
			cut.entries = append(cut.entries, p.n)
			total -= int64(u.Entries[p.n])
			delete(u.Entries, p.n)
		}
	}
	return cut
}
