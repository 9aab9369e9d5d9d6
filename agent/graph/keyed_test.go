package graph

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/store"
)

// tmsg is the item of the tests' keyed channel, a stand-in for a message.
type tmsg struct {
	ID      string `json:"id"`
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

// keyed is a test channel declared outside the kernel through Channel, with
// add_messages-like semantics: an item whose ID is present replaces it in
// place, remove deletes by ID, replace empties the list first.
type keyed struct{ c *keyedChannel }

type keyedOp struct {
	Append  []tmsg   `json:"append,omitempty"`
	Replace []tmsg   `json:"replace,omitempty"`
	Remove  []string `json:"remove,omitempty"`
}

type keyedChannel struct{ name string }

func newKeyed(s *Schema, name string) keyed {
	c := &keyedChannel{name}
	s.Declare(c)
	return keyed{c}
}

func (k keyed) Append(ms ...tmsg) Write { return NewWrite(k.c, keyedOp{Append: ms}) }
func (k keyed) Replace(ms ...tmsg) Write {
	return NewWrite(k.c, keyedOp{Replace: append([]tmsg{}, ms...)})
}
func (k keyed) Remove(ids ...string) Write {
	return NewWrite(k.c, keyedOp{Remove: ids})
}
func (k keyed) Get(s State) []tmsg { v, _ := s.Get(k.c).([]tmsg); return v }

func (c *keyedChannel) Name() string    { return c.name }
func (c *keyedChannel) Exclusive() bool { return false }

func (c *keyedChannel) Apply(cur any, op Op) (any, Change, error) {
	o := op.(keyedOp)
	prev, _ := cur.([]tmsg)
	items := append([]tmsg(nil), prev...) // copy: earlier States keep theirs
	var ops []store.Op
	for _, id := range o.Remove {
		for i, m := range items {
			if m.ID == id {
				items = append(items[:i], items[i+1:]...)
				ops = append(ops, store.Op{Kind: store.OpRemove, ID: id})
				break
			}
		}
	}
	add := o.Append
	if o.Replace != nil {
		items, add = nil, o.Replace
		ops = append(ops, store.Op{Kind: store.OpReset})
	}
	for _, m := range add {
		if m.ID == "" {
			return nil, Change{}, fmt.Errorf("item has no id")
		}
		b, _ := json.Marshal(m)
		ops = append(ops, store.Op{Kind: store.OpUpsert, ID: m.ID, Body: b})
		replaced := false
		for i := range items {
			if items[i].ID == m.ID {
				items[i], replaced = m, true
			}
		}
		if !replaced {
			items = append(items, m)
		}
	}
	return items, Change{Ops: ops}, nil
}

func (c *keyedChannel) Load(_ json.RawMessage, items []store.Item) (any, error) {
	out := []tmsg{}
	for _, it := range items {
		var m tmsg
		if err := json.Unmarshal(it.Body, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *keyedChannel) Encode(op Op) (json.RawMessage, error) { return json.Marshal(op) }

func (c *keyedChannel) Decode(raw json.RawMessage) (Op, error) {
	var o keyedOp
	err := json.Unmarshal(raw, &o)
	return o, err
}
