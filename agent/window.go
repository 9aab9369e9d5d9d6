package agent

import (
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Window selects what the model sees of a history, without changing it:
//   - an AI message whose tool calls are not all answered is dropped (unless it
//     is the last message), and so are tool messages without their AI message;
//   - the last keep messages stay, plus every system message, plus the AI
//     message each kept tool message answers, plus all answers of a kept AI message;
//   - tool outputs longer than maxTool bytes are cut with a note of their size.
func Window(msgs []message.Message, keep, maxTool int) []message.Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == message.Tool {
			answered[m.ToolCallID] = true
		}
	}
	owner := map[string]int{} // call ID -> index in clean of its AI message
	clean := make([]message.Message, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case message.AI:
			if len(m.ToolCalls) > 0 && i != len(msgs)-1 {
				complete := true
				for _, c := range m.ToolCalls {
					complete = complete && answered[c.ID]
				}
				if !complete {
					continue
				}
			}
			for _, c := range m.ToolCalls {
				owner[c.ID] = len(clean)
			}
		case message.Tool:
			if _, ok := owner[m.ToolCallID]; !ok {
				continue
			}
		}
		clean = append(clean, m)
	}
	kept := make([]bool, len(clean))
	start := max(0, len(clean)-keep)
	for i := range clean {
		kept[i] = i >= start || clean[i].Role == message.System
	}
	// A kept tool message brings its AI message, which brings all its answers.
	for i := start; i < len(clean); i++ {
		if clean[i].Role != message.Tool {
			continue
		}
		ai := owner[clean[i].ToolCallID]
		if kept[ai] && ai >= start {
			continue
		}
		kept[ai] = true
		calls := map[string]bool{}
		for _, c := range clean[ai].ToolCalls {
			calls[c.ID] = true
		}
		for j := ai + 1; j < len(clean); j++ {
			if clean[j].Role == message.Tool && calls[clean[j].ToolCallID] {
				kept[j] = true
			}
		}
	}
	out := make([]message.Message, 0, keep+8)
	for i, m := range clean {
		if !kept[i] {
			continue
		}
		if m.Role == message.Tool && maxTool > 0 && len(m.Content) > maxTool {
			m.Content = tools.Cut(m.Content, maxTool)
		}
		out = append(out, m)
	}
	return out
}
