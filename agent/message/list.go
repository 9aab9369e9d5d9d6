package message

// List is an ordered set of messages with add_messages semantics: appending a
// message whose ID is present replaces it in place, Remove deletes by ID, and
// RemoveAll clears the list.
//
// A List is a value: copying it is O(1) and appending to the copy leaves the
// original's view unchanged, because appends only write past the original's
// length. Replacements and removals copy. Only the newest copy may be changed,
// and not while another goroutine reads it.
type List struct {
	items []Message
	index map[string]int
}

// Len returns the number of messages.
func (l *List) Len() int { return len(l.items) }

// All returns the messages in order. The caller must not modify the slice.
func (l *List) All() []Message { return l.items }

// Has reports whether a message with the given ID is present.
func (l *List) Has(id string) bool {
	i, ok := l.index[id]
	return ok && i < len(l.items) && l.items[i].ID == id
}

// Upsert appends m, or replaces the message with the same ID in place.
// It reports whether m was appended (true) or replaced an existing one.
func (l *List) Upsert(m Message) bool {
	if l.index == nil {
		l.index = make(map[string]int)
	}
	if i, ok := l.index[m.ID]; ok && i < len(l.items) {
		items := make([]Message, len(l.items))
		copy(items, l.items)
		items[i] = m
		l.items = items
		return false
	}
	l.index[m.ID] = len(l.items)
	l.items = append(l.items, m)
	return true
}

// Remove deletes the messages with the given IDs; unknown IDs are ignored.
func (l *List) Remove(ids ...string) {
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		if _, ok := l.index[id]; ok {
			drop[id] = true
		}
	}
	if len(drop) == 0 {
		return
	}
	items := make([]Message, 0, len(l.items)-len(drop))
	index := make(map[string]int, len(l.items)-len(drop))
	for _, m := range l.items {
		if drop[m.ID] {
			continue
		}
		index[m.ID] = len(items)
		items = append(items, m)
	}
	l.items, l.index = items, index
}

// RemoveAll clears the list.
func (l *List) RemoveAll() {
	l.items, l.index = nil, nil
}
