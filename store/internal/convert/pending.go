package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The graph stores a finished task's writes, and a queued input, as a
// pending write: a JSON array of writes, each {"c": channel, "w": op} where
// op is the operation's JSON as its channel encodes it (agent/graph). The
// binaries before 0.2 wrote an op code with a value, items or IDs instead;
// rewritePending turns those into the current encoding, so the graph reads
// only that.

// legacyWrite is one write of a pending write as binaries before 0.2
// encoded it, or as the graph encodes it now (W set).
type legacyWrite struct {
	C   string            `json:"c"`
	W   json.RawMessage   `json:"w,omitempty"`
	O   uint8             `json:"o,omitempty"`
	V   json.RawMessage   `json:"v,omitempty"`
	I   []json.RawMessage `json:"i,omitempty"`
	IDs []string          `json:"ids,omitempty"`
}

// currentWrite is one write as the graph encodes it.
type currentWrite struct {
	C string          `json:"c"`
	W json.RawMessage `json:"w,omitempty"`
}

// op returns the operation JSON of a legacy write, as the kernel's channels
// and the messages channel decode it: a Value's value, {"append": items},
// {"reset": true}, {"replace": items} or {"remove": ids}.
func (l legacyWrite) op() (json.RawMessage, error) {
	switch l.O {
	case 1:
		return l.V, nil
	case 2:
		return json.Marshal(map[string]any{"append": l.I})
	case 3:
		return json.RawMessage(`{"reset":true}`), nil
	case 4:
		return json.Marshal(map[string]any{"replace": append([]json.RawMessage{}, l.I...)})
	case 5:
		return json.Marshal(map[string]any{"remove": l.IDs})
	}
	return nil, fmt.Errorf("unknown op code %d", l.O)
}

// rewritePending returns the pending write raw in the current encoding: raw
// itself when it holds no legacy write (or is not a list of writes at all,
// which is not the converter's to judge); an error for a legacy write whose
// op code is unknown.
func rewritePending(raw []byte) ([]byte, error) {
	var in []legacyWrite
	if err := json.Unmarshal(raw, &in); err != nil {
		return raw, nil
	}
	legacy := false
	for _, w := range in {
		if w.W == nil && w.O != 0 {
			legacy = true
		}
	}
	if !legacy {
		return raw, nil
	}
	out := make([]currentWrite, len(in))
	for i, w := range in {
		out[i] = currentWrite{C: w.C, W: w.W}
		if w.W == nil {
			op, err := w.op()
			if err != nil {
				return nil, fmt.Errorf("a pending write of channel %q from before 0.2: %w", w.C, err)
			}
			out[i].W = op
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b), nil
}
