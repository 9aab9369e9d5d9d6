package agent

import "fmt"

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

func (m Mode) orDefault() Mode {
	if m == "" {
		return ModeAgent
	}
	return m
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
