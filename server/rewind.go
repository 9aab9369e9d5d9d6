package server

import (
	"context"
	"fmt"
)

// The rewind commands (docs/rewind.md): a session's checkpoints (one per
// prompt, the state just before it was sent), rewinding the conversation,
// the files or both to one, and forking a new session from one.

// CheckpointsArgs are agent.checkpoints' arguments.
type CheckpointsArgs struct {
	Session string `json:"session" required:"true"`
}

// CheckpointFile is a file a prompt's run changed.
type CheckpointFile struct {
	Path       string `json:"path"` // relative to its project, with slashes
	URI        string `json:"uri"`
	Added      int    `json:"added"`   // lines
	Removed    int    `json:"removed"` // lines
	Restorable bool   `json:"restorable"`
	Reason     string `json:"reason,omitempty"` // why it is not restorable
}

// CheckpointRow is one checkpoint of agent.checkpoints: the state just
// before prompt Checkpoint was sent, and the files that prompt's run changed.
type CheckpointRow struct {
	Checkpoint int              `json:"checkpoint"`
	Prompt     string           `json:"prompt"` // its first line
	Time       string           `json:"time"`   // RFC 3339
	Model      string           `json:"model"`
	Files      []CheckpointFile `json:"files"`
}

// CheckpointsResult is agent.checkpoints' result.
type CheckpointsResult struct {
	Checkpoints []CheckpointRow `json:"checkpoints"`
}

// RewindArgs are agent.rewind's arguments.
type RewindArgs struct {
	Session    string `json:"session" required:"true"`
	Checkpoint int    `json:"checkpoint" required:"true"`
	// Restore is both (""), conversation or files.
	Restore string `json:"restore,omitempty"`
}

func (a RewindArgs) validate() error {
	switch a.Restore {
	case "", "both", "conversation", "files":
		return nil
	}
	return fmt.Errorf("restore must be \"both\", \"conversation\" or \"files\", not %q", a.Restore)
}

// FileRef names a file.
type FileRef struct {
	Path string `json:"path"`
	URI  string `json:"uri"`
}

// RewindConflict is a file the user changed after the agent did.
type RewindConflict struct {
	Path string `json:"path"`
	URI  string `json:"uri"`
	Kept bool   `json:"kept"` // the user's version was kept
}

// NotRestorable is a file a rewind could not put back, and why.
type NotRestorable struct {
	Path   string `json:"path"`
	URI    string `json:"uri"`
	Reason string `json:"reason"`
}

// RewindResult is agent.rewind's result.
type RewindResult struct {
	Checkpoint int `json:"checkpoint"`
	// Conversation: prompt Checkpoint and what followed left the history.
	Conversation  bool             `json:"conversation"`
	Restored      []FileRef        `json:"restored"`
	Conflicts     []RewindConflict `json:"conflicts"`
	NotRestorable []NotRestorable  `json:"notRestorable"`
}

// ForkArgs are agent.fork's arguments.
type ForkArgs struct {
	Session    string `json:"session" required:"true"`
	Checkpoint int    `json:"checkpoint" required:"true"`
}

// ForkResult is agent.fork's result: the new session.
type ForkResult struct {
	Session string `json:"session"`
}

// rewindCommands are the rewind rows of Commands.
var rewindCommands = []Command{
	command("agent.checkpoints", "Lists a session's checkpoints: one per prompt (agent.run, follow-ups, queued prompts), the state just before it was sent, with the files that prompt's run changed (docs/rewind.md).",
		"`{checkpoints: [{checkpoint, prompt, time, model, files: [{path, uri, added, removed, restorable, reason?}]}]}`; checkpoint counts prompts from 1; prompt is its first line; path is relative to its project; reason says why a file is not restorable (changed by a command whose earlier content is unknown, or its content was pruned)",
		(*Server).checkpointsCommand),
	command("agent.rewind", "Returns a session that is not running to checkpoint N (before prompt N): restore both (the default), conversation (prompt N and what followed leave the history, kept in the store as a branch) or files (every file prompts N and later changed is put back, through the editor as one workspace/applyEdit labelled \"Rewind to before prompt N\", or atomically on disk headless). A file the user changed after the agent did is a conflict: the editor is asked (Restore anyway / Keep mine); headless it is kept. Pruned contents and files now outside their project are refused before anything changes.",
		"`{checkpoint, conversation, restored: [{path, uri}], conflicts: [{path, uri, kept}], notRestorable: [{path, uri, reason}]}`; conversation says whether the history was rewound",
		(*Server).rewindCommand),
	command("agent.fork", "Starts a new session whose history is the session's before prompt N (checkpoint N); files are untouched. The new session continues with agent.run and loads with ACP's session/load like any other.",
		"`{session}`: the new session", (*Server).forkCommand),
}

func init() { Commands = append(Commands, rewindCommands...) }

func (s *Server) checkpointsCommand(ctx context.Context, call commandCall, a CheckpointsArgs) (CheckpointsResult, error) {
	return CheckpointsResult{}, fmt.Errorf("agent.checkpoints: not built yet")
}

func (s *Server) rewindCommand(ctx context.Context, call commandCall, a RewindArgs) (RewindResult, error) {
	return RewindResult{}, fmt.Errorf("agent.rewind: not built yet")
}

func (s *Server) forkCommand(ctx context.Context, call commandCall, a ForkArgs) (ForkResult, error) {
	return ForkResult{}, fmt.Errorf("agent.fork: not built yet")
}
