package graph

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

type op uint8

const (
	opSet op = iota + 1
	opAppend
	opReset
	opReplace
	opRemove
)

// Write is one typed write to one channel. Build it with a channel key's
// methods (Set, Append, Reset, Replace, Remove); a zero Write is invalid.
type Write struct {
	ch    *channel
	op    op
	value any
	items []any
	msgs  []message.Message
	ids   []string
}

// Patch is everything one node task writes in one step.
type Patch struct{ writes []Write }

// NewPatch groups writes into the single patch a node returns.
func NewPatch(writes ...Write) Patch { return Patch{writes: writes} }

// wireWrite is a Write as JSON, for pending writes.
type wireWrite struct {
	C   string            `json:"c"`
	O   op                `json:"o"`
	V   json.RawMessage   `json:"v,omitempty"`
	I   []json.RawMessage `json:"i,omitempty"`
	IDs []string          `json:"ids,omitempty"`
}

func (s *Schema) encodePatch(p Patch) (json.RawMessage, error) {
	out := make([]wireWrite, 0, len(p.writes))
	for _, w := range p.writes {
		if err := s.check(w); err != nil {
			return nil, err
		}
		ww := wireWrite{C: w.ch.name, O: w.op, IDs: w.ids}
		var err error
		if w.op == opSet {
			if ww.V, err = json.Marshal(w.value); err != nil {
				return nil, fmt.Errorf("encode %s: %w", w.ch.name, err)
			}
		}
		for _, it := range w.items {
			b, err := json.Marshal(it)
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", w.ch.name, err)
			}
			ww.I = append(ww.I, b)
		}
		for _, m := range w.msgs {
			b, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", w.ch.name, err)
			}
			ww.I = append(ww.I, b)
		}
		out = append(out, ww)
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
		w := Write{ch: ch, op: ww.O, ids: ww.IDs}
		if ww.O == opSet {
			v, err := ch.decode(ww.V)
			if err != nil {
				return Patch{}, fmt.Errorf("decode %s: %w", ch.name, err)
			}
			w.value = v
		}
		for _, it := range ww.I {
			v, err := ch.decode(it)
			if err != nil {
				return Patch{}, fmt.Errorf("decode %s: %w", ch.name, err)
			}
			if ch.kind == MessagesKind {
				w.msgs = append(w.msgs, v.(message.Message))
			} else {
				w.items = append(w.items, v)
			}
		}
		p.writes = append(p.writes, w)
	}
	return p, nil
}

// check verifies that w targets a channel of this schema with an operation its kind allows.
func (s *Schema) check(w Write) error {
	if w.ch == nil {
		return fmt.Errorf("write to undeclared channel (zero key)")
	}
	if s.chans[w.ch.name] != w.ch {
		return fmt.Errorf("write to undeclared channel %q", w.ch.name)
	}
	ok := false
	switch w.ch.kind {
	case LastValue:
		ok = w.op == opSet
	case Appends:
		ok = w.op == opAppend || w.op == opReset
	case MessagesKind:
		ok = w.op == opAppend || w.op == opReplace || w.op == opRemove
	}
	if !ok {
		return fmt.Errorf("channel %q (%s) does not take this write", w.ch.name, w.ch.kind)
	}
	return nil
}

// delta accumulates what a step changed, in the store's terms.
type delta struct {
	values map[string]json.RawMessage
	lists  map[string][]store.Op
}

// apply applies patches in order to a copy of vals and returns the new values
// and the delta to checkpoint. A last-value channel written twice is an error.
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
			name := w.ch.name
			switch w.ch.kind {
			case LastValue:
				if written[name] {
					return nil, d, fmt.Errorf("channel %q written twice in one step", name)
				}
				written[name] = true
				b, err := json.Marshal(w.value)
				if err != nil {
					return nil, d, fmt.Errorf("encode %s: %w", name, err)
				}
				next[name] = w.value
				d.values[name] = b
			case Appends:
				cur, _ := next[name].([]any)
				if w.op == opReset {
					next[name] = []any(nil)
					d.lists[name] = append(d.lists[name], store.Op{Kind: store.OpReset})
					continue
				}
				for _, it := range w.items {
					b, err := json.Marshal(it)
					if err != nil {
						return nil, d, fmt.Errorf("encode %s: %w", name, err)
					}
					d.lists[name] = append(d.lists[name], store.Op{Kind: store.OpUpsert, Body: b})
				}
				next[name] = append(cur, w.items...)
			case MessagesKind:
				l, _ := next[name].(message.List)
				switch w.op {
				case opRemove:
					l.Remove(w.ids...)
					for _, id := range w.ids {
						d.lists[name] = append(d.lists[name], store.Op{Kind: store.OpRemove, ID: id})
					}
				case opReplace:
					l.RemoveAll()
					d.lists[name] = append(d.lists[name], store.Op{Kind: store.OpReset})
				}
				for _, m := range w.msgs {
					if err := m.Validate(); err != nil {
						return nil, d, fmt.Errorf("channel %q: %w", name, err)
					}
					b, err := json.Marshal(m)
					if err != nil {
						return nil, d, fmt.Errorf("encode %s: %w", name, err)
					}
					l.Upsert(m)
					d.lists[name] = append(d.lists[name], store.Op{Kind: store.OpUpsert, ID: m.ID, Body: b})
				}
				next[name] = l
			}
		}
	}
	return next, d, nil
}

// load rebuilds channel values from a stored state.
func (s *Schema) load(st *store.State) (map[string]any, error) {
	vals := make(map[string]any, len(s.chans))
	for name, raw := range st.Values {
		ch := s.chans[name]
		if ch == nil || ch.kind != LastValue {
			continue // a channel the schema no longer declares
		}
		v, err := ch.decode(raw)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		vals[name] = v
	}
	for name, items := range st.Lists {
		ch := s.chans[name]
		if ch == nil {
			continue
		}
		switch ch.kind {
		case Appends:
			list := make([]any, 0, len(items))
			for _, it := range items {
				v, err := ch.decode(it.Body)
				if err != nil {
					return nil, fmt.Errorf("load %s: %w", name, err)
				}
				list = append(list, v)
			}
			vals[name] = list
		case MessagesKind:
			var l message.List
			for _, it := range items {
				v, err := ch.decode(it.Body)
				if err != nil {
					return nil, fmt.Errorf("load %s: %w", name, err)
				}
				l.Upsert(v.(message.Message))
			}
			vals[name] = l
		}
	}
	return vals, nil
}
