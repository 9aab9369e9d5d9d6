// Package graph is the execution kernel of one agent run: a declared state
// schema, nodes that each return one patch, edges and conditional edges,
// Send-style fan-out, super-steps with a deterministic barrier, and a checkpoint
// after every step.
package graph

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// Kind is how a channel combines writes.
type Kind uint8

// Channel kinds.
const (
	// LastValue channels hold one value; a step may write them at most once.
	LastValue Kind = iota
	// Appends channels concatenate items, like Python's operator.add.
	Appends
	// MessagesKind channels hold messages with add_messages semantics.
	MessagesKind
)

func (k Kind) String() string {
	switch k {
	case LastValue:
		return "last-value"
	case Appends:
		return "append"
	case MessagesKind:
		return "messages"
	}
	return fmt.Sprintf("kind(%d)", k)
}

type channel struct {
	name   string
	kind   Kind
	decode func(json.RawMessage) (any, error) // a value, or one list item
	zero   any
}

// Schema declares a state's channels once. Declare channels with NewValue,
// NewList and NewMessages.
type Schema struct {
	chans map[string]*channel
	names []string // declaration order
}

// NewSchema returns an empty schema.
func NewSchema() *Schema { return &Schema{chans: map[string]*channel{}} }

func (s *Schema) declare(c *channel) *channel {
	if _, dup := s.chans[c.name]; dup {
		panic(fmt.Sprintf("graph: channel %q declared twice", c.name))
	}
	s.chans[c.name] = c
	s.names = append(s.names, c.name)
	return c
}

func decoderOf[T any]() func(json.RawMessage) (any, error) {
	return func(raw json.RawMessage) (any, error) {
		var v T
		err := json.Unmarshal(raw, &v)
		return v, err
	}
}

// Value is the key of a last-value channel holding a T.
type Value[T any] struct{ ch *channel }

// List is the key of an append channel of T items.
type List[T any] struct{ ch *channel }

// Messages is the key of a messages channel.
type Messages struct{ ch *channel }

// NewValue declares a last-value channel.
func NewValue[T any](s *Schema, name string) Value[T] {
	var zero T
	return Value[T]{s.declare(&channel{name: name, kind: LastValue, decode: decoderOf[T](), zero: zero})}
}

// NewList declares an append channel.
func NewList[T any](s *Schema, name string) List[T] {
	return List[T]{s.declare(&channel{name: name, kind: Appends, decode: decoderOf[T]()})}
}

// NewMessages declares a messages channel.
func NewMessages(s *Schema, name string) Messages {
	return Messages{s.declare(&channel{name: name, kind: MessagesKind, decode: decoderOf[message.Message](), zero: message.List{}})}
}

// Name returns the channel's name.
func (k Value[T]) Name() string { return k.ch.name }

// Name returns the channel's name.
func (k List[T]) Name() string { return k.ch.name }

// Name returns the channel's name.
func (k Messages) Name() string { return k.ch.name }

// Get returns the channel's value in s, or T's zero value.
func (k Value[T]) Get(s State) T {
	if v, ok := s.vals[k.ch.name].(T); ok {
		return v
	}
	var zero T
	return zero
}

// Get returns the channel's items in s. The caller must not modify the slice.
func (k List[T]) Get(s State) []T {
	raw, _ := s.vals[k.ch.name].([]any)
	out := make([]T, len(raw))
	for i, v := range raw {
		out[i] = v.(T)
	}
	return out
}

// Get returns the messages in s. The caller must not modify the slice.
func (k Messages) Get(s State) []message.Message {
	l, _ := s.vals[k.ch.name].(message.List)
	return l.All()
}

// Set writes v to a last-value channel.
func (k Value[T]) Set(v T) Write { return Write{ch: k.ch, op: opSet, value: v} }

// Append adds items to an append channel.
func (k List[T]) Append(items ...T) Write {
	w := Write{ch: k.ch, op: opAppend, items: make([]any, len(items))}
	for i, it := range items {
		w.items[i] = it
	}
	return w
}

// Reset empties an append channel.
func (k List[T]) Reset() Write { return Write{ch: k.ch, op: opReset} }

// Append adds messages; a message whose ID is present replaces it in place.
func (k Messages) Append(msgs ...message.Message) Write {
	return Write{ch: k.ch, op: opAppend, msgs: msgs}
}

// Replace removes every message, then appends msgs.
func (k Messages) Replace(msgs ...message.Message) Write {
	return Write{ch: k.ch, op: opReplace, msgs: msgs}
}

// Remove deletes the messages with the given IDs.
func (k Messages) Remove(ids ...string) Write {
	return Write{ch: k.ch, op: opRemove, ids: ids}
}

// State is a read-only view of a run's channels at one step.
type State struct {
	vals map[string]any
	arg  json.RawMessage
}

// Arg decodes the argument a Send route gave this task into v.
func (s State) Arg(v any) error {
	if s.arg == nil {
		return fmt.Errorf("task has no send argument")
	}
	return json.Unmarshal(s.arg, v)
}
