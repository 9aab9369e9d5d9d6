package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Compaction keeps the newest turns that fill this part of the room for
// history (a quarter after the provider refused a request), so that the next
// compaction is many steps away.
const (
	compactKeep       = 0.5
	compactKeepHarder = 0.25
	// maxOverflowRetries is how many times a refused request is compacted
	// harder and sent again before the run fails.
	maxOverflowRetries = 3
	// maxSummaryCalls bounds the summary calls of one step; older turns
	// past them are dropped.
	maxSummaryCalls = 4
	// toolOutputShare: one tool output takes at most this part of the room
	// for history.
	toolOutputShare = 5
)

// fitTools chooses the tools the run shows the model: those whose
// definitions fit in their share of the budget, in toolRank's order; it
// sets r.specs, r.withheld (the names of the others) and r.specTokens.
func (r *run) fitTools() {
	ordered := slices.Clone(r.tools.Specs())
	slices.SortStableFunc(ordered, func(a, b model.ToolSpec) int { return toolRank(a.Name) - toolRank(b.Name) })
	share := r.budget.prompt() / toolShare
	r.specs, r.withheld, r.specTokens = nil, nil, 0
	for _, t := range ordered {
		if n := r.rt.counter.tool(t); r.specTokens+n <= share {
			r.specTokens += n
			r.specs = append(r.specs, t)
		} else {
			r.withheld = append(r.withheld, t.Name)
		}
	}
}

// showTools fits the tools of r, a run in project (r.fitTools), and tells
// the tool source which were left out.
func (rt *Runtime) showTools(r *run, project string) {
	r.fitTools()
	if rt.cfg.ToolSource == nil {
		return
	}
	if p, ok := rt.cfg.Workspace.Project(project); ok {
		rt.cfg.ToolSource.Withheld(p, r.withheld)
	}
}

// fits checks, before a run starts, that its system prompt, tools and prompt
// fit the budget together: a run that cannot send its first request fails
// at once, naming both sizes.
func (rt *Runtime) fits(r *run, project string, prompt message.Message) error {
	rt.showTools(r, project)
	sys := message.Message{ID: "", Role: message.System, Content: rt.systemPrompt(r, project, Summary{}, nil, nil)}
	need := rt.counter.request(model.Request{Messages: []message.Message{sys, prompt}, Tools: r.specs, Model: r.model})
	if room := r.budget.prompt(); need > room {
		return &TooLargeError{Need: need, Budget: room, ContextTokens: r.budget.limit()}
	}
	return nil
}

// pinnedAt are the indexes of the human messages from the one that started
// the current run on: the run's prompt and the prompts queued since,
// ascending. It reads the history back from its end to the run's start.
func pinnedAt(msgs []message.Message, runStart string) []int {
	if runStart == "" {
		return nil
	}
	var at []int
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.Human {
			at = append(at, i)
		}
		if msgs[i].ID == runStart {
			slices.Reverse(at)
			return at
		}
	}
	return nil // the run's start is gone (a replaced history): nothing to pin
}

// afterSummary is the index of the first message the summary does not cover.
func afterSummary(msgs []message.Message, s Summary) int {
	if s.UpTo == "" {
		return 0
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ID == s.UpTo {
			return i + 1
		}
	}
	return 0
}

// composed is one model request and what building it changed.
type composed struct {
	req       model.Request
	estimate  int
	summary   Summary
	compacted bool // summary changed: the step writes it
}

// compose builds the request of a model turn: the system prompt (with the
// summary), the tools, the pinned prompts and the newest turns that fit the
// budget. When the history outgrows it, older turns are compacted first;
// that never fails (see compact).
func (rt *Runtime) compose(ctx context.Context, r *run, s graph.State, summary Summary, reason string) composed {
	msgs := rt.st.messages.Get(s)
	project, todos, nested := rt.st.project.Get(s), rt.st.todos.Get(s), rt.st.instructionDirs.Get(s)
	pinned := pinnedAt(msgs, rt.st.runStart.Get(s))
	out := composed{summary: summary}
	// build returns the system prompt, the limits of the history shown
	// with it, and the estimate of what a request holds besides that
	// history (the estimate of the whole request is fixed plus the window's
	// cost: counter.request's sum).
	build := func() (sys message.Message, lim limits, fixed int) {
		sys = message.Message{Role: message.System, Content: rt.systemPrompt(r, project, out.summary, todos, nested)}
		fixed = replyPriming + rt.counter.message(sys) + r.specTokens
		room := r.budget.prompt() - fixed
		// A tool output takes at most a fifth of the room (at about three
		// bytes a token), so that a small context holds several turns.
		return sys, limits{tokens: room, messages: rt.cfg.Window, toolBytes: min(rt.cfg.MaxToolOutput, max(room, 0)*3/toolOutputShare)}, fixed
	}
	request := func(sys message.Message, w window) model.Request {
		return model.Request{Messages: slices.Insert(w.shown, 0, sys), Tools: r.specs, Model: r.model, OutputSchema: r.format, Images: rt.st.images.Get(s)}
	}
	sys, lim, fixed := build()
	from := afterSummary(msgs, out.summary)
	w := selectWindow(msgs, from, pinned, lim, &rt.counter)
	if w.olderEnd <= from && reason != "overflow" {
		out.req = request(sys, w)
		out.estimate = fixed + w.cost
		return out
	}
	// Compact: keep the newest turns that fill part of the room, fold the
	// rest into the summary. After an overflow, keep less, and compact even
	// when the lowered budget would hold it all.
	target := lim
	target.tokens = int(float64(lim.tokens) * compactKeep)
	if reason == "overflow" {
		target.tokens = int(float64(lim.tokens) * compactKeepHarder)
	}
	kept := selectWindow(msgs, from, pinned, target, &rt.counter)
	if kept.olderEnd > from {
		older, dropped, upTo := kept.older(msgs, from, pinned, maxSummaryCalls*rt.summaryRoom(r, out.summary), &rt.counter)
		before := kept.cost + costOf(older, &rt.counter)
		var done compaction
		out.summary, done = rt.compact(ctx, r, out.summary, older, dropped, upTo)
		out.compacted = true
		sys, lim, fixed = build()
		w = selectWindow(msgs, afterSummary(msgs, out.summary), pinned, lim, &rt.counter)
		ev := event.ContextCompacted{Before: before, After: w.cost, Messages: done.messages, Summarized: done.err == nil && dropped == 0, Reason: reason}
		switch {
		case done.err != nil:
			ev.Error = done.err.Error()
		case dropped > 0:
			ev.Error = fmt.Sprintf("%d older messages were too many to summarize in one step", dropped)
		}
		r.emit(ev)
	}
	out.req = request(sys, w)
	out.estimate = fixed + w.cost
	return out
}

// maxSummaryRead is the most tokens one message costs a summary call,
// which reads it cut short (renderForSummary).
const maxSummaryRead = 700

// compaction is what one compaction did: how many messages left the
// model's view, and why some were dropped unsummarized, if they were.
type compaction struct {
	messages int
	err      error
}

// compact folds older turns into the summary, one model call per part that
// fits the budget (at most maxSummaryCalls), and moves the summary up to
// upTo. The dropped messages before them, and the turns left when a call
// fails or times out, leave the model's view with a note in the summary:
// compaction never fails a run nor blocks a session.
func (rt *Runtime) compact(ctx context.Context, r *run, prev Summary, older []message.Message, dropped int, upTo string) (Summary, compaction) {
	done := compaction{messages: len(older) + dropped}
	if upTo == "" {
		return prev, done
	}
	next := prev
	rest := older
	for calls := 0; len(rest) > 0 && calls < maxSummaryCalls; calls++ {
		part := rt.summaryPart(r, next, rest)
		sum, err := rt.summarize(ctx, r, next, rest[:part])
		if err != nil {
			done.err = err
			break
		}
		next = sum
		rest = rest[part:]
	}
	if lost := dropped + len(rest); lost > 0 {
		why := "too many to summarize in one step"
		if done.err != nil {
			why = done.err.Error()
		}
		rt.cfg.Log("session %s: dropped %d older messages from the model's view without a summary (%s)", r.session.ID, lost, why)
		next.Text = strings.TrimSpace(next.Text + fmt.Sprintf("\n(%d earlier messages were dropped without a summary.)", lost))
	}
	next.UpTo = upTo
	return next, done
}

// summaryRoom is what one summary call may read, in estimated tokens.
func (rt *Runtime) summaryRoom(r *run, prev Summary) int {
	return max(r.budget.prompt()-600-rt.counter.message(message.Message{Content: prev.Text}), 500)
}

// summaryPart is how many of the older messages one summary call can take
// within the budget: whole turns, at least one message.
func (rt *Runtime) summaryPart(r *run, prev Summary, older []message.Message) int {
	room := rt.summaryRoom(r, prev)
	used, n := 0, 0
	for n < len(older) {
		cost := min(rt.counter.message(older[n]), maxSummaryRead)
		if n > 0 && used+cost > room {
			break
		}
		used += cost
		n++
	}
	// Never split a turn: a tool answer goes with its call.
	for n < len(older) && older[n].Role == message.Tool {
		n++
	}
	return n
}

// renderForSummary is a message as the summary call reads it: cut short.
func renderForSummary(m message.Message) message.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s\n", m.Role, tools.Cut(m.Content, 2000))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, "  called %s %s\n", c.Name, tools.Cut(c.Args, 300))
	}
	for _, img := range m.Images {
		fmt.Fprintf(&b, "  [image %s, %d×%d]\n", img.Name, img.Width, img.Height)
	}
	return message.Message{ID: m.ID + "#summary", Content: b.String()}
}

// summaryInstructions ask for a summary the agent can work from.
const summaryInstructions = "Summarize this coding session for your own later reference: the user's goals and requests, decisions, files touched, results of builds and tests, open problems. At most 300 words."

// summarize folds older messages into the summary with one model call,
// bounded by the summary timeout.
func (rt *Runtime) summarize(ctx context.Context, r *run, prev Summary, older []message.Message) (Summary, error) {
	var b strings.Builder
	if prev.Text != "" {
		fmt.Fprintf(&b, "Summary so far:\n%s\n\n", prev.Text)
	}
	b.WriteString("Conversation to add:\n")
	for _, m := range older {
		b.WriteString(renderForSummary(m).Content)
	}
	req := model.Request{Messages: []message.Message{
		{ID: "sum-sys", Role: message.System, Content: summaryInstructions},
		{ID: "sum-in", Role: message.Human, Content: "Summarize the conversation.\n\n" + b.String()},
	}, Model: r.model}
	sctx, cancel := context.WithTimeout(ctx, rt.cfg.SummaryTimeout)
	defer cancel()
	resp, err := rt.cfg.Model.Chat(sctx, req, nil)
	if err != nil {
		if ctx.Err() != nil {
			return prev, ctx.Err()
		}
		return prev, fmt.Errorf("summarize history: %w", err)
	}
	r.used(resp.Usage)
	text := strings.TrimSpace(resp.Content)
	if max := r.budget.prompt() / 8 * 3; len(text) > max { // a summary of at most an eighth of the budget
		text = tools.Cut(text, max)
	}
	return Summary{Text: text, UpTo: older[len(older)-1].ID}, nil
}

// chat sends a model turn. A provider's overflow lowers the budget and the
// turn is composed again, compacting harder, up to maxOverflowRetries times;
// only then does the step fail, naming the limit.
func (rt *Runtime) chat(ctx context.Context, r *run, s graph.State) (model.Response, composed, error) {
	reason := "budget"
	summary := rt.st.summary.Get(s)
	for attempt := 0; ; attempt++ {
		c := rt.compose(ctx, r, s, summary, reason)
		summary = c.summary
		resp, err := rt.cfg.Model.Chat(ctx, c.req, func(text string) { r.emit(event.MessageDelta{Text: text}) })
		c.compacted = summary != rt.st.summary.Get(s)
		var over *model.OverflowError
		if errors.As(err, &over) && ctx.Err() == nil {
			r.budget.overflow(over, c.estimate)
			rt.cfg.Log("session %s: the model refused a request of about %d tokens as too large (%v); the budget is now %d tokens", r.session.ID, c.estimate, over, r.budget.limit())
			if attempt < maxOverflowRetries {
				reason = "overflow"
				continue
			}
			return resp, c, fmt.Errorf("the model's context is too small for this conversation even after compacting it %d times (limit %d tokens): %w", maxOverflowRetries, r.budget.limit(), err)
		}
		if err == nil {
			r.budget.observe(c.estimate, resp.Usage.PromptTokens, requestBytes(c.req))
		}
		return resp, c, err
	}
}
