package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Memory is a Store kept in memory, for tests and for runs that need no persistence.
type Memory struct {
	mu        sync.Mutex
	threads   map[threadKey]*memThread
	sessions  map[string]Session
	approvals map[string]string
	now       func() time.Time
}

type threadKey struct{ thread, ns string }

type memThread struct {
	step    int
	status  Status
	values  map[string]json.RawMessage
	lists   map[string]*memList
	next    []Task
	pending map[string]json.RawMessage
	updated time.Time
}

type memList struct {
	items []Item
	index map[string]int
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{threads: map[threadKey]*memThread{}, sessions: map[string]Session{}, now: time.Now}
}

func (l *memList) apply(op Op) {
	switch op.Kind {
	case OpReset:
		l.items, l.index = nil, map[string]int{}
	case OpRemove:
		i, ok := l.index[op.ID]
		if !ok {
			return
		}
		l.items = append(l.items[:i:i], l.items[i+1:]...)
		delete(l.index, op.ID)
		for j := i; j < len(l.items); j++ {
			if l.items[j].ID != "" {
				l.index[l.items[j].ID] = j
			}
		}
	case OpUpsert, OpAppend:
		if op.ID != "" {
			if i, ok := l.index[op.ID]; ok {
				l.items[i].Body = op.Body
				return
			}
			l.index[op.ID] = len(l.items)
		}
		l.items = append(l.items, Item{ID: op.ID, Body: op.Body})
	}
}

// Put implements Checkpointer.
func (m *Memory) Put(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := threadKey{cp.Thread, cp.Namespace}
	t := m.threads[k]
	if t == nil {
		t = &memThread{values: map[string]json.RawMessage{}, lists: map[string]*memList{}, pending: map[string]json.RawMessage{}}
		m.threads[k] = t
	}
	if cp.Step != t.step {
		t.pending = map[string]json.RawMessage{}
	}
	t.step, t.status, t.next, t.updated = cp.Step, cp.Status, cp.Next, m.now()
	for name, v := range cp.Values {
		t.values[name] = v
	}
	for name, ops := range cp.Lists {
		l := t.lists[name]
		if l == nil {
			l = &memList{index: map[string]int{}}
			t.lists[name] = l
		}
		for _, op := range ops {
			l.apply(op)
		}
	}
	if cp.Index != nil {
		m.sessions[cp.Index.ID] = *cp.Index
	}
	return nil
}

// PutWrite implements Checkpointer.
func (m *Memory) PutWrite(ctx context.Context, w PendingWrite) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := threadKey{w.Thread, w.Namespace}
	t := m.threads[k]
	if t == nil {
		t = &memThread{step: -1, values: map[string]json.RawMessage{}, lists: map[string]*memList{}, pending: map[string]json.RawMessage{}}
		m.threads[k] = t
	}
	if _, ok := t.pending[w.Task]; !ok {
		t.pending[w.Task] = append(json.RawMessage(nil), w.Writes...)
	}
	return nil
}

// Load implements Checkpointer.
func (m *Memory) Load(ctx context.Context, thread, ns string) (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.threads[threadKey{thread, ns}]
	if t == nil || t.step < 0 {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, ErrNotFound)
	}
	s := &State{Step: t.step, Status: t.status, Next: append([]Task(nil), t.next...), Updated: t.updated,
		Values: map[string]json.RawMessage{}, Lists: map[string][]Item{}, Pending: map[string]json.RawMessage{}}
	for k, v := range t.values {
		s.Values[k] = v
	}
	for k, l := range t.lists {
		s.Lists[k] = append([]Item(nil), l.items...)
	}
	for k, v := range t.pending {
		s.Pending[k] = v
	}
	return s, nil
}

// PutSession implements Sessions.
func (m *Memory) PutSession(ctx context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.ID] = s
	return nil
}

// Session implements Sessions.
func (m *Memory) Session(ctx context.Context, id string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return s, nil
}

// Sessions implements Sessions.
func (m *Memory) Sessions(ctx context.Context, project string) ([]Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Session
	for _, s := range m.sessions {
		if project == "" || s.Project == project {
			out = append(out, s)
		}
	}
	sortSessions(out)
	return out, nil
}

// DeleteSession implements Sessions.
func (m *Memory) DeleteSession(ctx context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[id]
	delete(m.sessions, id)
	for k := range m.threads {
		if k.thread == id {
			delete(m.threads, k)
		}
	}
	return ok, nil
}

// DeleteOlderThan implements Sessions.
func (m *Memory) DeleteOlderThan(ctx context.Context, t time.Time) (int, error) {
	m.mu.Lock()
	var old []string
	for id, s := range m.sessions {
		if s.Updated.Before(t) {
			old = append(old, id)
		}
	}
	m.mu.Unlock()
	for _, id := range old {
		if _, err := m.DeleteSession(ctx, id); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}

// Close implements Store.
func (m *Memory) Close() error { return nil }

// Name implements Store.
func (m *Memory) Name() string { return "memory" }

// Acquire implements Leases: a memory store is this process's alone.
func (m *Memory) Acquire(ctx context.Context, session string, ttl time.Duration, lost func()) (func(), error) {
	return noLease(), nil
}

func sortSessions(s []Session) {
	sort.Slice(s, func(i, j int) bool {
		if !s[i].Updated.Equal(s[j].Updated) {
			return s[i].Updated.After(s[j].Updated)
		}
		return s[i].ID > s[j].ID
	})
}

// Approval implements Approvals.
func (m *Memory) Approval(ctx context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.approvals[key], nil
}

// SetApproval implements Approvals.
func (m *Memory) SetApproval(ctx context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.approvals == nil {
		m.approvals = map[string]string{}
	}
	if value == "" {
		delete(m.approvals, key)
	} else {
		m.approvals[key] = value
	}
	return nil
}
