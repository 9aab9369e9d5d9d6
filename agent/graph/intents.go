package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-lsp/agent-lsp/store"
)

// Intents: a node about to do something outside the state (edit a file,
// run a command) records its intent first (RecordIntent), durably when the
// checkpointer keeps intents (store.Intents). The intents of a step that
// did not complete are kept as pending writes of that step; a run that
// resumes it gives them to the step's tasks (Intent), which settle what the
// interrupted run had begun instead of doing it again blindly. The next
// checkpoint drops them.

type taskKey struct{}

// taskOf returns the runner of the node that ctx belongs to, nil outside one.
func taskOf(ctx context.Context) *runner {
	r, _ := ctx.Value(taskKey{}).(*runner)
	return r
}

// RecordIntent stores body as the intent under key of the task ctx belongs
// to, and returns once it is durable. Outside a node, or with a
// checkpointer that keeps no intents, it records nothing and returns nil.
func RecordIntent(ctx context.Context, key string, body json.RawMessage) error {
	r := taskOf(ctx)
	if r == nil || r.cfg.Checkpointer == nil {
		return nil
	}
	iw, ok := r.cfg.Checkpointer.(store.Intents)
	if !ok {
		return nil
	}
	if err := iw.PutIntent(context.WithoutCancel(ctx), r.cfg.Thread, r.cfg.Namespace, key, body); err != nil {
		return fmt.Errorf("record the intent: %w", err)
	}
	return nil
}

// Intent returns the intent stored under key by the interrupted run that
// the run of ctx's node resumes, if any: only the first step a Resume runs
// has intents.
func Intent(ctx context.Context, key string) (json.RawMessage, bool) {
	r := taskOf(ctx)
	if r == nil {
		return nil, false
	}
	body, ok := r.intents[key]
	return body, ok
}

// takeIntents moves the intents among a checkpoint's pending writes to the
// runner, and returns the pending writes without them.
func (r *runner) takeIntents(pending map[string]json.RawMessage) map[string]json.RawMessage {
	rest := make(map[string]json.RawMessage, len(pending))
	for k, v := range pending {
		if key, ok := strings.CutPrefix(k, store.IntentPrefix); ok {
			if r.intents == nil {
				r.intents = map[string]json.RawMessage{}
			}
			r.intents[key] = v
			continue
		}
		rest[k] = v
	}
	return rest
}

// keepIntents stores again, as intents of the step after the newest
// checkpoint, the intents among pending (the writes of the step before it).
func (r *runner) keepIntents(ctx context.Context, pending map[string]json.RawMessage) error {
	iw, ok := r.cfg.Checkpointer.(store.Intents)
	if !ok {
		return nil
	}
	for k, v := range pending {
		if key, ok := strings.CutPrefix(k, store.IntentPrefix); ok {
			if err := iw.PutIntent(context.WithoutCancel(ctx), r.cfg.Thread, r.cfg.Namespace, key, v); err != nil {
				return fmt.Errorf("keep the intent %s: %w", key, err)
			}
		}
	}
	return nil
}
