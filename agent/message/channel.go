package message

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/store"
)

// Channel is the key of a graph channel of messages with add_messages
// semantics: Append adds messages (one whose ID is present replaces it in
// place), Remove deletes by ID, Replace removes all and then appends. It is a
// reducer: it is never set. It is stored one record per message, so a step
// stores only the messages it changed; a message new to the list is an
// append (store.OpAppend), which the store writes without looking it up.
type Channel struct{ c *channel }

// NewChannel declares a messages channel in s.
func NewChannel(s *graph.Schema, name string) Channel {
	c := &channel{name: name}
	s.Declare(c)
	return Channel{c}
}

// Name returns the channel's name.
func (k Channel) Name() string { return k.c.name }

// Append adds messages; a message whose ID is present replaces it in place.
func (k Channel) Append(msgs ...Message) graph.Write {
	return graph.NewWrite(k.c, op{Append: msgs})
}

// Replace removes every message, then appends msgs.
func (k Channel) Replace(msgs ...Message) graph.Write {
	all := append([]Message{}, msgs...)
	return graph.NewWrite(k.c, op{Replace: &all})
}

// Remove deletes the messages with the given IDs; unknown IDs are ignored.
func (k Channel) Remove(ids ...string) graph.Write {
	return graph.NewWrite(k.c, op{Remove: ids})
}

// Get returns the messages in s. The caller must not modify the slice.
func (k Channel) Get(s graph.State) []Message {
	l, _ := s.Get(k.c).(List)
	return l.All()
}

// op is one write of the channel. Replace is non-nil for a replace (which
// may append nothing); Remove applies before Append. In pending writes it is
// {"append": [...]}, {"replace": [...]} or {"remove": [...]}.
type op struct {
	Append  []Message  `json:"append,omitempty"`
	Replace *[]Message `json:"replace,omitempty"`
	Remove  []string   `json:"remove,omitempty"`
}

type channel struct{ name string }

func (c *channel) Name() string    { return c.name }
func (c *channel) Exclusive() bool { return false }

// Apply implements graph.Channel. List's copy-on-write keeps earlier states
// unchanged.
func (c *channel) Apply(cur any, o graph.Op) (any, graph.Change, error) {
	w, ok := o.(op)
	if !ok {
		return nil, graph.Change{}, fmt.Errorf("a messages channel cannot take %T", o)
	}
	l, _ := cur.(List)
	var ops []store.Op
	if len(w.Remove) > 0 {
		l.Remove(w.Remove...)
		for _, id := range w.Remove {
			ops = append(ops, store.Op{Kind: store.OpRemove, ID: id})
		}
	}
	add := w.Append
	if w.Replace != nil {
		l.RemoveAll()
		ops = append(ops, store.Op{Kind: store.OpReset})
		add = *w.Replace
	}
	for _, m := range add {
		if err := m.Validate(); err != nil {
			return nil, graph.Change{}, err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, graph.Change{}, err
		}
		kind := store.OpUpsert
		if l.Upsert(m) {
			kind = store.OpAppend // new to the list: the store need not look it up
		}
		ops = append(ops, store.Op{Kind: kind, ID: m.ID, Body: b})
	}
	return l, graph.Change{Ops: ops}, nil
}

// Load implements graph.Channel.
func (c *channel) Load(_ json.RawMessage, items []store.Item) (any, error) {
	var l List
	for _, it := range items {
		var m Message
		if err := json.Unmarshal(it.Body, &m); err != nil {
			return nil, fmt.Errorf("message %s: %w", it.ID, err)
		}
		l.Upsert(m)
	}
	return l, nil
}

// Encode implements graph.Channel.
func (c *channel) Encode(o graph.Op) (json.RawMessage, error) { return json.Marshal(o) }

// Decode implements graph.Channel.
func (c *channel) Decode(raw json.RawMessage) (graph.Op, error) {
	var w op
	err := json.Unmarshal(raw, &w)
	return w, err
}
