package agent

import (
	"encoding/json"
	"slices"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// limits bound what one model request shows of a history.
type limits struct {
	tokens    int // estimated tokens the shown messages may cost
	messages  int // most messages shown besides the pinned ones; 0: no limit
	toolBytes int // a tool output longer than this is cut, keeping head and tail
}

// window is what one model request shows of a session's messages, chosen
// without changing them:
//   - the pinned messages (the current run's prompts) are always shown;
//   - complete turns (an AI message with all its tool answers, or one other
//     message) are taken from the newest back while they fit the limits, and
//     never split;
//   - an AI message whose tool calls are not all answered is dropped (unless it
//     is the last message), and so are tool messages without their AI message;
//   - the newest turn is always shown, its tool outputs and arguments cut to
//     fit when it alone is too large;
//   - tool outputs longer than toolBytes are cut with a note of their size.
//
// Choosing it costs what is shown, not the history's length: the history is
// read back from its end until the limits are reached.
type window struct {
	shown []message.Message // in history order
	cost  int               // estimated tokens of shown
	// olderEnd: msgs[from:olderEnd] did not fit and is not covered by the
	// summary; older returns its complete turns, to compact.
	olderEnd int
}

// selectWindow chooses the window of msgs: the messages before index from
// are covered by the summary and shown only when pinned (pinned holds
// indexes, ascending).
func selectWindow(msgs []message.Message, from int, pinned []int, lim limits, c *counter) window {
	w := window{olderEnd: from}
	isPinned := func(i int) bool { _, ok := slices.BinarySearch(pinned, i); return ok }
	for _, i := range pinned {
		w.cost += c.messageAt(i, msgs[i])
	}
	var (
		shown   []int                   // indexes of the shown messages but the pinned, newest first
		changed map[int]message.Message // messages cut to fit, by index
		t       []int                   // the turn being read
	)
	change := func(i int, m message.Message) {
		if changed == nil {
			changed = map[int]message.Message{}
		}
		changed[i] = m
	}
	count := 0
	end := len(msgs) // exclusive end of the turn being read
	for end > from {
		t, end = turnEnding(msgs, from, end, t[:0])
		if len(t) == 0 || (len(t) == 1 && isPinned(t[0])) {
			continue // dropped (an incomplete call, orphan answers), or pinned
		}
		cost := 0
		for _, i := range t {
			m := msgs[i]
			if m.Role == message.Tool && lim.toolBytes > 0 && len(m.Content) > lim.toolBytes {
				m.Content = tools.Cut(m.Content, lim.toolBytes)
				change(i, m)
			}
			cost += c.messageAt(i, m)
		}
		newest := len(shown) == 0
		if !newest && (w.cost+cost > lim.tokens || (lim.messages > 0 && count+len(t) > lim.messages)) {
			w.olderEnd = t[len(t)-1] + 1
			break
		}
		if newest && w.cost+cost > lim.tokens {
			turn := make([]message.Message, len(t))
			for k, i := range t {
				turn[k] = msgs[i]
				if m, ok := changed[i]; ok {
					turn[k] = m
				}
			}
			shrink(turn, lim.tokens-w.cost)
			cost = costOf(turn, c)
			for k, i := range t {
				change(i, turn[k])
			}
		}
		w.cost += cost
		count += len(t)
		for k := len(t) - 1; k >= 0; k-- {
			shown = append(shown, t[k])
		}
	}
	// Merge the shown turns (newest first) and the pinned messages
	// (ascending) into history order, leaving room for the system prompt
	// that a request puts first.
	w.shown = make([]message.Message, 0, len(shown)+len(pinned)+1)
	p := 0
	for k := len(shown) - 1; k >= 0; k-- {
		i := shown[k]
		for ; p < len(pinned) && pinned[p] < i; p++ {
			w.shown = append(w.shown, msgs[pinned[p]])
		}
		if m, ok := changed[i]; ok {
			w.shown = append(w.shown, m)
		} else {
			w.shown = append(w.shown, msgs[i])
		}
	}
	for ; p < len(pinned); p++ {
		w.shown = append(w.shown, msgs[pinned[p]])
	}
	return w
}

// turnEnding appends to turn the indexes of the complete turn that ends at
// msgs[end-1] and returns them, and where the turn starts; no indexes when
// the messages there are dropped. It reads no further back than from.
func turnEnding(msgs []message.Message, from, end int, turn []int) ([]int, int) {
	last := end == len(msgs)
	i := end - 1
	for i >= from && msgs[i].Role == message.Tool {
		i--
	}
	if i < from { // answers whose call is covered by the summary or gone
		return turn, from
	}
	m := msgs[i]
	answers := msgs[i+1 : end]
	if m.Role != message.AI || len(m.ToolCalls) == 0 {
		if len(answers) > 0 {
			return turn, i + 1 // orphan answers: dropped; m is read next
		}
		return append(turn, i), i
	}
	if len(answers) == 0 && last {
		return append(turn, i), i // the call being answered right now
	}
	for _, call := range m.ToolCalls {
		if !slices.ContainsFunc(answers, func(a message.Message) bool { return a.ToolCallID == call.ID }) {
			return turn, i // a call without its answer: the turn is dropped
		}
	}
	turn = append(turn, i)
	for k, a := range answers {
		if slices.ContainsFunc(m.ToolCalls, func(c message.ToolCall) bool { return c.ID == a.ToolCallID }) {
			turn = append(turn, i+1+k)
		}
	}
	return turn, i
}

// older returns what a compaction folds into the summary: the complete
// turns of msgs[from:w.olderEnd] but the pinned ones, oldest first, as many
// as cost at most capacity estimated tokens read by the summary, from the
// newest back. dropped counts the messages before them, which no summary
// will cover; upTo is the ID of the newest message the compaction covers.
func (w window) older(msgs []message.Message, from int, pinned []int, capacity int, c *counter) (older []message.Message, dropped int, upTo string) {
	if w.olderEnd <= from {
		return nil, 0, ""
	}
	upTo = msgs[w.olderEnd-1].ID
	used := 0
	end := w.olderEnd
	var t []int
	for end > from {
		var start int
		t, start = turnEnding(msgs, from, end, t[:0])
		if len(t) == 1 && slices.Contains(pinned, t[0]) {
			end = start
			continue
		}
		cost := 0
		for _, i := range t {
			cost += min(c.message(msgs[i]), maxSummaryRead)
		}
		if used+cost > capacity && len(older) > 0 {
			break
		}
		used += cost
		for k := len(t) - 1; k >= 0; k-- {
			older = append(older, msgs[t[k]])
		}
		end = start
	}
	slices.Reverse(older)
	for i := from; i < end; i++ {
		if !slices.Contains(pinned, i) {
			dropped++
		}
	}
	return older, dropped, upTo
}

// shrink cuts the tool outputs and call arguments of a turn that alone does
// not fit in room tokens, evenly, keeping head and tail of each.
func shrink(t []message.Message, room int) {
	parts := 0
	for _, m := range t {
		parts += 1 + len(m.ToolCalls)
	}
	// About three bytes a token for what is cut (Cut keeps at least its minimum).
	each := max(room, 0) * 3 / max(parts, 1)
	for k, m := range t {
		if len(m.Content) > each {
			m.Content = tools.Cut(m.Content, each)
		}
		if len(m.ToolCalls) > 0 {
			calls := append([]message.ToolCall(nil), m.ToolCalls...)
			for j := range calls {
				if len(calls[j].Args) > each {
					calls[j].Args = shortArgs(calls[j].Args, each)
				}
			}
			m.ToolCalls = calls
		}
		t[k] = m
	}
}

// shortArgs shows arguments cut to about n bytes as a JSON object that says
// so (providers expect arguments to be JSON).
func shortArgs(args string, n int) string {
	b, _ := json.Marshal(map[string]string{"shortened for the context window": tools.Cut(args, n)})
	return string(b)
}

// costOf sums the estimated tokens of messages.
func costOf(ms []message.Message, c *counter) int {
	n := 0
	for _, m := range ms {
		n += c.message(m)
	}
	return n
}
