package graph

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/store"
)

// Value is the key of a last-value channel holding a T: a step may Set it at
// most once, and it is stored as one record.
type Value[T any] struct{ c *valueChannel[T] }

// NewValue declares a last-value channel.
func NewValue[T any](s *Schema, name string) Value[T] {
	c := &valueChannel[T]{name: name}
	s.Declare(c)
	return Value[T]{c}
}

// Name returns the channel's name.
func (k Value[T]) Name() string { return k.c.name }

// Set writes v.
func (k Value[T]) Set(v T) Write { return write(k.c, v) }

// write is NewWrite that leaves a zero key's write zero (invalid), rather
// than an interface holding a nil channel.
func write[C interface {
	comparable
	Channel
}](c C, op Op) Write {
	var zero C
	if c == zero {
		return Write{}
	}
	return Write{ch: c, op: op}
}

// Get returns the channel's value in s, or T's zero value.
func (k Value[T]) Get(s State) T {
	v, _ := s.Get(k.c).(T)
	return v
}

type valueChannel[T any] struct{ name string }

func (c *valueChannel[T]) Name() string    { return c.name }
func (c *valueChannel[T]) Exclusive() bool { return true }

func (c *valueChannel[T]) Apply(_ any, op Op) (any, Change, error) {
	v, ok := op.(T)
	if !ok {
		return nil, Change{}, fmt.Errorf("a value channel of %T cannot take %T", *new(T), op)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Change{}, err
	}
	return v, Change{Record: b}, nil
}

func (c *valueChannel[T]) Load(rec json.RawMessage, _ []store.Item) (any, error) {
	var v T
	if rec == nil {
		return v, nil
	}
	err := json.Unmarshal(rec, &v)
	return v, err
}

func (c *valueChannel[T]) Encode(op Op) (json.RawMessage, error) { return json.Marshal(op) }

func (c *valueChannel[T]) Decode(raw json.RawMessage) (Op, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// List is the key of an append channel of T items (operator.add semantics):
// writes Append items or Reset it to empty; it is never set. It is stored item
// by item, so a step stores only what it appended.
type List[T any] struct{ c *listChannel[T] }

// NewList declares an append channel.
func NewList[T any](s *Schema, name string) List[T] {
	c := &listChannel[T]{name: name}
	s.Declare(c)
	return List[T]{c}
}

// Name returns the channel's name.
func (k List[T]) Name() string { return k.c.name }

// Append adds items.
func (k List[T]) Append(items ...T) Write { return write(k.c, listOp[T]{Append: items}) }

// Reset empties the list.
func (k List[T]) Reset() Write { return write(k.c, listOp[T]{Reset: true}) }

// Get returns the channel's items in s. The caller must not modify the slice.
func (k List[T]) Get(s State) []T {
	v, _ := s.Get(k.c).([]T)
	return v
}

// listOp is a List write: a reset, or items to append.
type listOp[T any] struct {
	Append []T  `json:"append,omitempty"`
	Reset  bool `json:"reset,omitempty"`
}

type listChannel[T any] struct{ name string }

func (c *listChannel[T]) Name() string    { return c.name }
func (c *listChannel[T]) Exclusive() bool { return false }

func (c *listChannel[T]) Apply(cur any, op Op) (any, Change, error) {
	o, ok := op.(listOp[T])
	if !ok {
		return nil, Change{}, fmt.Errorf("a list channel of %T cannot take %T", *new(T), op)
	}
	if o.Reset {
		return []T(nil), Change{Ops: []store.Op{{Kind: store.OpReset}}}, nil
	}
	items, _ := cur.([]T)
	ops := make([]store.Op, 0, len(o.Append))
	for _, it := range o.Append {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, Change{}, err
		}
		ops = append(ops, store.Op{Kind: store.OpUpsert, Body: b})
	}
	// A clipped append copies: an earlier State keeps its own items.
	return append(items[:len(items):len(items)], o.Append...), Change{Ops: ops}, nil
}

func (c *listChannel[T]) Load(_ json.RawMessage, items []store.Item) (any, error) {
	out := make([]T, 0, len(items))
	for _, it := range items {
		var v T
		if err := json.Unmarshal(it.Body, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *listChannel[T]) Encode(op Op) (json.RawMessage, error) { return json.Marshal(op) }

func (c *listChannel[T]) Decode(raw json.RawMessage) (Op, error) {
	var o listOp[T]
	err := json.Unmarshal(raw, &o)
	return o, err
}
