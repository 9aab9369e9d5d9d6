package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agent-lsp/agent-lsp/store"
)

// readTimeout bounds one read, so a server that stops answering fails the
// call instead of hanging it.
const readTimeout = time.Minute

func readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, readTimeout)
}

// readErr names the database in a failed read's error.
func (s *Store) readErr(err error) error { return fmt.Errorf("read from %s: %w", s.url, err) }

// nonNil keeps an empty body a non-NULL bytea.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

const (
	// sqlPutHead moves the head to the checkpoint's step; in the same
	// statement (one snapshot: the head before the move) it drops the
	// pending writes when the step changes.
	sqlPutHead = `WITH dropped AS (DELETE FROM agent_lsp_pending p USING agent_lsp_heads h
			WHERE p.thread = $1 AND p.ns = $2 AND h.thread = $1 AND h.ns = $2 AND h.step <> $3)
		INSERT INTO agent_lsp_heads (thread, ns, step, status, next, updated) VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (thread, ns) DO UPDATE SET step = EXCLUDED.step, status = EXCLUDED.status, next = EXCLUDED.next, updated = EXCLUDED.updated`
	// sqlStepFollows fails the transaction of a checkpoint that does not
	// follow the thread's stored one (store.GapError).
	sqlStepFollows = `SELECT agent_lsp_step_follows($1, $2, $3)`
	sqlPutValue    = `INSERT INTO agent_lsp_values (thread, ns, name, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread, ns, name) DO UPDATE SET body = EXCLUDED.body`
	sqlReset   = `DELETE FROM agent_lsp_items WHERE thread = $1 AND ns = $2 AND list = $3`
	sqlRemove  = `DELETE FROM agent_lsp_items WHERE thread = $1 AND ns = $2 AND list = $3 AND id = $4`
	sqlAppend  = `INSERT INTO agent_lsp_items (thread, ns, list, body) VALUES ($1, $2, $3, $4)`
	sqlUpsertp = `INSERT INTO agent_lsp_items (thread, ns, list, id, body) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (thread, ns, list, id) DO UPDATE SET body = EXCLUDED.body`
	sqlPutSession = `INSERT INTO agent_lsp_sessions (id, project, updated, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET project = EXCLUDED.project, updated = EXCLUDED.updated, body = EXCLUDED.body`
	sqlPutIntent = `INSERT INTO agent_lsp_pending (thread, ns, task, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread, ns, task) DO UPDATE SET body = EXCLUDED.body`
	sqlPutWrite = `INSERT INTO agent_lsp_pending (thread, ns, task, body) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread, ns, task) DO NOTHING`
	// sqlLoad reads a namespace in one statement, so in one snapshot: kind
	// 0 is the head (name: status, seq: step, body: next), 1 a value, 2 a
	// pending write, 3 a list item.
	sqlLoad = `SELECT 0 AS kind, status AS name, NULL::text AS id, step AS seq, next AS body, updated FROM agent_lsp_heads WHERE thread = $1 AND ns = $2
		UNION ALL SELECT 1, name, NULL, 0, body, NULL FROM agent_lsp_values WHERE thread = $1 AND ns = $2
		UNION ALL SELECT 2, task, NULL, 0, body, NULL FROM agent_lsp_pending WHERE thread = $1 AND ns = $2
		UNION ALL SELECT 3, list, id, seq, body, NULL FROM agent_lsp_items WHERE thread = $1 AND ns = $2`
)

// queuePut queues the statements that apply cp, in order, in the commit's
// transaction.
func queuePut(b *pgx.Batch, cp store.Checkpoint, next []byte, index []byte) {
	b.Queue(sqlStepFollows, cp.Thread, cp.Namespace, int64(cp.Step))
	b.Queue(sqlPutHead, cp.Thread, cp.Namespace, int64(cp.Step), string(cp.Status), next)
	for name, v := range cp.Values {
		b.Queue(sqlPutValue, cp.Thread, cp.Namespace, name, nonNil(store.PackRecord(v)))
	}
	for name, ops := range cp.Lists {
		for _, op := range ops {
			switch op.Kind {
			case store.OpReset:
				b.Queue(sqlReset, cp.Thread, cp.Namespace, name)
			case store.OpRemove:
				b.Queue(sqlRemove, cp.Thread, cp.Namespace, name, op.ID)
			case store.OpUpsert, store.OpAppend:
				if op.ID == "" {
					b.Queue(sqlAppend, cp.Thread, cp.Namespace, name, nonNil(store.PackRecord(op.Body)))
				} else {
					b.Queue(sqlUpsertp, cp.Thread, cp.Namespace, name, op.ID, nonNil(store.PackRecord(op.Body)))
				}
			}
		}
	}
	if cp.Index != nil {
		b.Queue(sqlPutSession, cp.Index.ID, cp.Index.Project, cp.Index.Updated, index)
	}
}

// Put implements store.Checkpointer. When it returns, the checkpoint is
// committed in sync mode, and in every mode when it ends a run (a status
// that Ended).
func (s *Store) Put(ctx context.Context, cp store.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, err)
	}
	for name, ops := range cp.Lists {
		for _, op := range ops {
			if op.Kind > store.OpAppend {
				return fail(fmt.Errorf("list %s: unknown list op %d", name, op.Kind))
			}
		}
	}
	// Encoded now: the caller may reuse its checkpoint once Put returns.
	var next, index []byte
	var err error
	if len(cp.Next) > 0 {
		if next, err = json.Marshal(cp.Next); err != nil {
			return fail(err)
		}
	}
	if cp.Index != nil {
		if index, err = json.Marshal(cp.Index); err != nil {
			return fail(err)
		}
	}
	token, fenced := s.fenceToken(cp.Thread)
	queue := func(b *pgx.Batch) {
		if fenced {
			b.Queue(sqlFence, cp.Thread, token)
		}
		queuePut(b, cp, next, index)
	}
	if cp.Step == 0 {
		s.c.Forget(cp.Thread, cp.Namespace) // a new run of a thread never stored
	}
	if err := s.write(cp.Durability, threadKey{cp.Thread, cp.Namespace}, queue, cp.Status.Ended()); err != nil {
		return fail(err)
	}
	return nil
}

// PutWrite implements store.Checkpointer.
func (s *Store) PutWrite(ctx context.Context, w store.PendingWrite) error {
	body := nonNil(store.PackRecord(w.Writes))
	token, fenced := s.fenceToken(w.Thread)
	queue := func(b *pgx.Batch) {
		if fenced {
			b.Queue(sqlFence, w.Thread, token)
		}
		b.Queue(sqlPutWrite, w.Thread, w.Namespace, w.Task, body)
	}
	if err := s.write(w.Durability, threadKey{w.Thread, w.Namespace}, queue, false); err != nil {
		return fmt.Errorf("put pending write %s/%s %s: %w", w.Thread, w.Namespace, w.Task, err)
	}
	return nil
}

// PutIntent implements store.Intents: a pending write under
// store.IntentPrefix+key, committed before it returns.
func (s *Store) PutIntent(ctx context.Context, thread, ns, key string, body json.RawMessage) error {
	packed := nonNil(store.PackRecord(body))
	token, fenced := s.fenceToken(thread)
	queue := func(b *pgx.Batch) {
		if fenced {
			b.Queue(sqlFence, thread, token)
		}
		b.Queue(sqlPutIntent, thread, ns, store.IntentPrefix+key, packed)
	}
	if err := s.write(store.Sync, threadKey{thread, ns}, queue, false); err != nil {
		return fmt.Errorf("put intent %s/%s %s: %w", thread, ns, key, err)
	}
	return nil
}

// leftOut names a damaged record Load left out (WithWarn).
func (s *Store) leftOut(thread, ns, what string, err error) {
	where := fmt.Sprintf("session %q", thread)
	if ns != "" {
		where += fmt.Sprintf(", namespace %q", ns)
	}
	s.warn(fmt.Sprintf("%s: %s is damaged (%v) and was left out", where, what, err))
}

// Load implements store.Checkpointer. A record whose seal fails (or that
// does not decompress) is left out and named (WithWarn), as the bbolt
// store does: damage is never returned as data.
func (s *Store) Load(ctx context.Context, thread, ns string) (*store.State, error) {
	fail := func(err error) (*store.State, error) {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	if err := s.Flush(); err != nil {
		return fail(err)
	}
	ctx, cancel := readCtx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, sqlLoad, thread, ns)
	if err != nil {
		return fail(s.readErr(err))
	}
	defer rows.Close()
	l := loading{st: &store.State{Values: map[string]json.RawMessage{}, Lists: map[string][]store.Item{}, Pending: map[string]json.RawMessage{}},
		lists: map[string][]seqItem{}}
	for rows.Next() {
		var r loadRow
		if err := rows.Scan(&r.kind, &r.name, &r.id, &r.seq, &r.body, &r.updated); err != nil {
			return fail(s.readErr(err))
		}
		if err := l.add(r, func(what string, err error) { s.leftOut(thread, ns, what, err) }); err != nil {
			return fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		return fail(s.readErr(err))
	}
	if !l.found {
		return fail(store.ErrNotFound)
	}
	s.c.Forget(thread, ns) // a run that loads the thread starts from what is stored
	for name, items := range l.lists {
		sort.Slice(items, func(i, j int) bool { return items[i].seq < items[j].seq })
		list := make([]store.Item, len(items))
		for i, x := range items {
			list[i] = x.it
		}
		l.st.Lists[name] = list
	}
	return l.st, nil
}

// loadRow is one row of sqlLoad.
type loadRow struct {
	kind    int32
	name    string
	id      *string
	seq     int64
	body    []byte
	updated *time.Time
}

// seqItem is a list item with its place in the list.
type seqItem struct {
	seq int64
	it  store.Item
}

// loading is a namespace's state as Load reads its rows.
type loading struct {
	st    *store.State
	lists map[string][]seqItem
	found bool // the head was read
}

// add adds row r; a damaged record is left out and told to leftOut.
func (l *loading) add(r loadRow, leftOut func(what string, err error)) error {
	switch r.kind {
	case 0:
		l.found = true
		l.st.Step, l.st.Status = int(r.seq), store.Status(r.name)
		if r.updated != nil {
			l.st.Updated = *r.updated
		}
		if len(r.body) > 0 {
			if err := json.Unmarshal(r.body, &l.st.Next); err != nil {
				return fmt.Errorf("corrupt checkpoint head: %w", err)
			}
		}
	case 1, 2:
		v, err := store.UnpackRecord(r.body)
		if err != nil {
			leftOut(fmt.Sprintf("%s %q", map[int32]string{1: "value", 2: "pending write"}[r.kind], r.name), err)
			return nil
		}
		if r.kind == 1 {
			l.st.Values[r.name] = v
		} else {
			l.st.Pending[r.name] = v
		}
	case 3:
		v, err := store.UnpackRecord(r.body)
		if err != nil {
			leftOut(fmt.Sprintf("item %d of list %s", r.seq, r.name), err)
			return nil
		}
		it := store.Item{Body: v}
		if r.id != nil {
			it.ID = *r.id
		}
		l.lists[r.name] = append(l.lists[r.name], seqItem{r.seq, it})
	}
	return nil
}

// PutSession implements store.Sessions.
func (s *Store) PutSession(ctx context.Context, sess store.Session) error {
	body, err := json.Marshal(sess)
	if err == nil {
		err = s.submit(func(b *pgx.Batch) { b.Queue(sqlPutSession, sess.ID, sess.Project, sess.Updated, body) }, true)
	}
	if err != nil {
		return fmt.Errorf("put session %s: %w", sess.ID, err)
	}
	return nil
}

// Session implements store.Sessions.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	fail := func(err error) (store.Session, error) { return store.Session{}, fmt.Errorf("session %s: %w", id, err) }
	if err := s.Flush(); err != nil {
		return fail(err)
	}
	ctx, cancel := readCtx(ctx)
	defer cancel()
	var body []byte
	err := s.pool.QueryRow(ctx, "SELECT body FROM agent_lsp_sessions WHERE id = $1", id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(s.readErr(err))
	}
	var sess store.Session
	if err := json.Unmarshal(body, &sess); err != nil {
		return fail(fmt.Errorf("the stored record cannot be read: %w", err))
	}
	return sess, nil
}

// Sessions implements store.Sessions: newest first (by Updated, then ID).
func (s *Store) Sessions(ctx context.Context, project string) ([]store.Session, error) {
	fail := func(err error) ([]store.Session, error) { return nil, fmt.Errorf("list sessions: %w", err) }
	if err := s.Flush(); err != nil {
		return fail(err)
	}
	ctx, cancel := readCtx(ctx)
	defer cancel()
	q, args := "SELECT id, body FROM agent_lsp_sessions", []any{}
	if project != "" {
		q, args = q+" WHERE project = $1", []any{project}
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return fail(s.readErr(err))
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			return fail(s.readErr(err))
		}
		var sess store.Session
		if err := json.Unmarshal(body, &sess); err != nil || sess.ID != id {
			s.warn(fmt.Sprintf("the stored record of session %q cannot be read and is left out of the list", id))
			continue
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return fail(s.readErr(err))
	}
	// Sorted here, on the records' exact times (the column keeps microseconds).
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// threadTables hold a thread's namespaces.
var threadTables = []string{"agent_lsp_heads", "agent_lsp_values", "agent_lsp_items", "agent_lsp_pending"}

// DeleteSession implements store.Sessions: the session's entry and every
// namespace (its subagents') of its thread go in one transaction.
func (s *Store) DeleteSession(ctx context.Context, id string) (bool, error) {
	var existed bool
	err := s.submit(func(b *pgx.Batch) {
		b.Queue("DELETE FROM agent_lsp_sessions WHERE id = $1", id).Exec(func(ct pgconn.CommandTag) error {
			existed = ct.RowsAffected() > 0
			return nil
		})
		for _, table := range threadTables {
			b.Queue("DELETE FROM "+table+" WHERE thread = $1", id)
		}
	}, true)
	if err != nil {
		return false, fmt.Errorf("delete session %s: %w", id, err)
	}
	return existed, nil
}

// DeleteOlderThan implements store.Sessions, in one statement.
func (s *Store) DeleteOlderThan(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.submit(func(b *pgx.Batch) {
		b.Queue(`WITH gone AS (DELETE FROM agent_lsp_sessions WHERE updated < $1 RETURNING id),
			h AS (DELETE FROM agent_lsp_heads WHERE thread IN (SELECT id FROM gone)),
			v AS (DELETE FROM agent_lsp_values WHERE thread IN (SELECT id FROM gone)),
			i AS (DELETE FROM agent_lsp_items WHERE thread IN (SELECT id FROM gone)),
			p AS (DELETE FROM agent_lsp_pending WHERE thread IN (SELECT id FROM gone))
			SELECT count(*) FROM gone`, t).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	}, true)
	if err != nil {
		return 0, fmt.Errorf("delete sessions older than %s: %w", t.Format(time.RFC3339), err)
	}
	return int(n), nil
}

// Approval implements store.Approvals.
func (s *Store) Approval(ctx context.Context, key string) (string, error) {
	ctx, cancel := readCtx(ctx)
	defer cancel()
	var v []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM agent_lsp_approvals WHERE key = $1", []byte(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read approval: %w", s.readErr(err))
	}
	return string(v), nil
}

// SetApproval implements store.Approvals.
func (s *Store) SetApproval(ctx context.Context, key, value string) error {
	err := s.submit(func(b *pgx.Batch) {
		if value == "" {
			b.Queue("DELETE FROM agent_lsp_approvals WHERE key = $1", []byte(key))
			return
		}
		b.Queue(`INSERT INTO agent_lsp_approvals (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, []byte(key), []byte(value))
	}, true)
	if err != nil {
		return fmt.Errorf("store approval: %w", err)
	}
	return nil
}
