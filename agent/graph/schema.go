// Package graph is the execution kernel of one agent run: a declared state
// schema, nodes that each return one patch, edges and conditional edges,
// Send-style fan-out, super-steps with a deterministic barrier, and a checkpoint
// after every step.
//
// The kernel knows channels, not what they hold: a Channel says how the writes
// of a step combine into its value and how that value is stored. Value and
// List are the kernel's own channels; a runtime declares others by
// implementing Channel (the agent's messages channel, with add_messages
// semantics, lives beside its messages).
package graph

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/store"
)

// Op is one write operation of a channel, opaque to the kernel: the channel
// that made it applies, encodes and decodes it.
type Op any

// Change is what one write changes in the store: a channel stored as one
// record reports its new value; a channel stored as a list reports list
// operations, so a step writes only what it changed.
type Change struct {
	Record json.RawMessage
	Ops    []store.Op
}

// Channel is one key of a state: how writes combine into its value, and how
// the value is stored. Implementations must be comparable (a pointer): a
// write is accepted only by the schema that declared its very channel.
type Channel interface {
	// Name is the key the channel is declared and stored under.
	Name() string
	// Exclusive reports whether a step may write the channel at most once, as a
	// last-value channel; a second write in one step is an error.
	Exclusive() bool
	// Apply applies one write to the current value (nil before the first
	// write) and returns the new value and the change to store. It must not
	// modify cur in a way a State handed out earlier could see.
	Apply(cur any, op Op) (next any, change Change, err error)
	// Load rebuilds the value from what the store kept: its record, or its items.
	Load(record json.RawMessage, items []store.Item) (any, error)
	// Encode and Decode turn one write operation into JSON and back, for the
	// pending writes of an interrupted step.
	Encode(op Op) (json.RawMessage, error)
	Decode(raw json.RawMessage) (Op, error)
}

// Schema declares a state's channels once. Declare the kernel's channels with
// NewValue and NewList, and others with Declare.
type Schema struct {
	chans map[string]Channel
	names []string // declaration order
}

// NewSchema returns an empty schema.
func NewSchema() *Schema { return &Schema{chans: map[string]Channel{}} }

// Declare adds ch to the schema. Declaring a name twice is a programming
// error and panics, like a duplicate http.ServeMux pattern.
func (s *Schema) Declare(ch Channel) {
	name := ch.Name()
	if _, dup := s.chans[name]; dup {
		panic(fmt.Sprintf("graph: channel %q declared twice", name))
	}
	s.chans[name] = ch
	s.names = append(s.names, name)
}

// Write is one typed write to one channel. Build it with a channel key's
// methods (Set, Append, Reset, ...); channel implementations build theirs
// with NewWrite. A zero Write is invalid.
type Write struct {
	ch Channel
	op Op
}

// NewWrite returns a write of op to ch, for Channel implementations: callers
// use the channel's typed helpers, which call it.
func NewWrite(ch Channel, op Op) Write { return Write{ch: ch, op: op} }

// Patch is everything one node task writes in one step.
type Patch struct{ writes []Write }

// NewPatch groups writes into the single patch a node returns.
func NewPatch(writes ...Write) Patch { return Patch{writes: writes} }

// State is a read-only view of a run's channels at one step.
type State struct {
	vals map[string]any
	arg  json.RawMessage
}

// Get returns ch's value in s (nil before its first write), for Channel
// implementations' typed getters.
func (s State) Get(ch Channel) any { return s.vals[ch.Name()] }

// Arg decodes the argument a Send route gave this task into v.
func (s State) Arg(v any) error {
	if s.arg == nil {
		return fmt.Errorf("task has no send argument")
	}
	return json.Unmarshal(s.arg, v)
}

// Load reads the newest checkpoint of a thread's namespace from cp: its state
// and status. It returns an error wrapping store.ErrNotFound for a thread that
// has none. It runs nothing, so readers (transcripts, listings) need no graph.
func (s *Schema) Load(ctx context.Context, cp store.Checkpointer, thread, namespace string) (State, Status, error) {
	st, err := cp.Load(ctx, thread, namespace)
	if err != nil {
		return State{}, "", err
	}
	vals, err := s.load(st)
	if err != nil {
		return State{}, "", fmt.Errorf("load thread %s/%s: %w", thread, namespace, err)
	}
	return State{vals: vals}, st.Status, nil
}

// check verifies that w targets a channel this schema declared.
func (s *Schema) check(w Write) error {
	if w.ch == nil {
		return fmt.Errorf("write to undeclared channel (zero write)")
	}
	if s.chans[w.ch.Name()] != w.ch {
		return fmt.Errorf("write to undeclared channel %q", w.ch.Name())
	}
	return nil
}

// delta accumulates what a step changed, in the store's terms.
type delta struct {
	values map[string]json.RawMessage
	lists  map[string][]store.Op
}

// apply applies patches in order to a copy of vals and returns the new values
// and the delta to checkpoint. An exclusive channel written twice is an error.
func (s *Schema) apply(vals map[string]any, patches []Patch) (map[string]any, delta, error) {
	next := make(map[string]any, len(vals))
	for k, v := range vals {
		next[k] = v
	}
	d := delta{values: map[string]json.RawMessage{}, lists: map[string][]store.Op{}}
	written := map[string]bool{}
	for _, p := range patches {
		for _, w := range p.writes {
			if err := s.check(w); err != nil {
				return nil, d, err
			}
			name := w.ch.Name()
			if w.ch.Exclusive() {
				if written[name] {
					return nil, d, fmt.Errorf("channel %q written twice in one step", name)
				}
				written[name] = true
			}
			v, ch, err := w.ch.Apply(next[name], w.op)
			if err != nil {
				return nil, d, fmt.Errorf("channel %q: %w", name, err)
			}
			next[name] = v
			if ch.Record != nil {
				d.values[name] = ch.Record
			}
			if len(ch.Ops) > 0 {
				d.lists[name] = append(d.lists[name], ch.Ops...)
			}
		}
	}
	return next, d, nil
}

// load rebuilds channel values from a stored state; channels the store does
// not hold keep no value, and stored channels the schema no longer declares
// are ignored.
func (s *Schema) load(st *store.State) (map[string]any, error) {
	vals := make(map[string]any, len(s.chans))
	for _, name := range s.names {
		rec, hasRec := st.Values[name]
		items, hasItems := st.Lists[name]
		if !hasRec && !hasItems {
			continue
		}
		v, err := s.chans[name].Load(rec, items)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		vals[name] = v
	}
	return vals, nil
}

// wireWrite is one write of a pending patch: the channel and its encoded
// op. (Pending writes of binaries before 0.2, which encoded op codes, are
// rewritten to this when the store converts or imports their file.)
type wireWrite struct {
	C string          `json:"c"`
	W json.RawMessage `json:"w,omitempty"`
}

func (s *Schema) encodePatch(p Patch) (json.RawMessage, error) {
	out := make([]wireWrite, 0, len(p.writes))
	for _, w := range p.writes {
		if err := s.check(w); err != nil {
			return nil, err
		}
		raw, err := w.ch.Encode(w.op)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", w.ch.Name(), err)
		}
		out = append(out, wireWrite{C: w.ch.Name(), W: raw})
	}
	return json.Marshal(out)
}

func (s *Schema) decodePatch(raw json.RawMessage) (Patch, error) {
	var in []wireWrite
	if err := json.Unmarshal(raw, &in); err != nil {
		return Patch{}, fmt.Errorf("decode pending write: %w", err)
	}
	var p Patch
	for _, ww := range in {
		ch := s.chans[ww.C]
		if ch == nil {
			return Patch{}, fmt.Errorf("decode pending write: undeclared channel %q", ww.C)
		}
		op, err := ch.Decode(ww.W)
		if err != nil {
			return Patch{}, fmt.Errorf("decode pending write of %s: %w", ww.C, err)
		}
		p.writes = append(p.writes, Write{ch: ch, op: op})
	}
	return p, nil
}
