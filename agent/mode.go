package agent

import (
	"fmt"
	"slices"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Mode is what a run may do.
type Mode string

// Modes of a run.
const (
	// ModeAgent reads, edits and runs commands (as the rules allow).
	ModeAgent Mode = "agent"
	// ModePlan only reads, and answers with a plan (Result.Plan).
	ModePlan Mode = "plan"
	// ModeAsk only reads, and answers questions.
	ModeAsk Mode = "ask"
)

// Modes are the modes, in the order a picker lists them.
var Modes = []Mode{ModeAgent, ModePlan, ModeAsk}

// ParseMode checks a mode's name; "" is ModeAgent.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAgent, nil
	case ModeAgent, ModePlan, ModeAsk:
		return m, nil
	}
	return "", fmt.Errorf("mode must be agent, plan or ask, not %q", s)
}

// readOnly reports whether the mode offers only the tools that read.
func (m Mode) readOnly() bool { return m == ModePlan || m == ModeAsk }

// modeName is the run's mode for events: "" for agent (the default).
func (r *run) modeName() string {
	if r.mode == ModeAgent {
		return ""
	}
	return string(r.mode)
}

// readingTools are agent-lsp's own tools a plan or ask run is offered: they
// read, or change only the run's own state (its project, its todo list).
// call_subagent is among them: a subagent gets its parent's tools, so it
// reads only too. run_command joins them where the sandbox confines
// commands (modeTools).
var readingTools = append([]string{"switch_project", "todo_write", "fetch_url", "call_subagent"}, tools.ReadOnlyTools...)

// modeTools are the tools of set the mode offers: all for agent; for plan
// and ask, the tools that read (readingTools), the MCP tools whose server
// says they only read (readOnlyHint), and run_command only where the
// sandbox confines commands (Landlock; commands then run read-only).
func (rt *Runtime) modeTools(m Mode, set tools.Set) tools.Set {
	if !m.readOnly() {
		return set
	}
	out := tools.Set{}
	for name, t := range set {
		switch {
		case t.External != "" && t.ReadOnly,
			t.External == "" && slices.Contains(readingTools, name),
			name == "run_command" && rt.confinesReadOnly():
			out[name] = t
		}
	}
	return out
}

// confinesReadOnly reports whether commands can be confined to reading:
// the sandbox is on and the kernel has Landlock.
func (rt *Runtime) confinesReadOnly() bool {
	return rt.cfg.Sandbox != nil && rt.cfg.SandboxSettings.Mode != sandbox.Off && rt.cfg.Sandbox.ABI() > 0
}

// refuseUnoffered answers a call of a tool the run's mode does not offer
// (a model that ignored the list): agent-lsp's own, or another program's
// (MCP) the mode withheld; ok is false for other calls.
func (r *run) refuseUnoffered(call string) (tools.Result, bool) {
	if _, offered := r.tools[call]; offered || !r.mode.readOnly() {
		return tools.Result{}, false
	}
	_, own := r.rt.cfg.Tools[call]
	if _, withheld := r.modeless[call]; !own && !withheld {
		return tools.Result{}, false // no tool of this name: the tool set refuses it as unknown
	}
	return tools.Result{IsError: true, Summary: call + " not offered in " + string(r.mode) + " mode",
		Content: fmt.Sprintf("error: %s is not offered in %s mode: this run only reads and changes nothing. Say in your answer what you would change; the user runs it in agent mode.", call, r.mode)}, true
}

// modePrompt is what the system prompt says of a plan or ask run.
func modePrompt(m Mode) string {
	switch m {
	case ModePlan:
		return "\n## Plan mode\nThis run only plans: you can read, search and ask the language tools, but not edit files or change anything. Investigate what the task needs, then answer with a plan the user can hand to agent mode: the goal, the files to change and how, the order of the steps, how to check the result (build, tests), and the risks or open questions. Answer with the plan only.\n"
	case ModeAsk:
		return "\n## Ask mode\nThis run answers questions: you can read, search and ask the language tools, but not edit files or change anything. Answer the user's question from what you find, citing files and lines.\n"
	}
	return ""
}
