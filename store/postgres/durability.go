package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agent-lsp/agent-lsp/store"
)

// The committer is store/durability.go's, with a pgx batch for a bbolt
// transaction: a job queues its statements, and a commit sends the jobs it
// took as one batch, which the server runs as one transaction (one round
// trip, one WAL flush).

// pgWork is the PostgreSQL store's unit of work for its store.Committer:
// it queues a write's statements.
type pgWork = func(*pgx.Batch)

type threadKey struct{ thread, ns string }

func (s *Store) startCommitter() {
	s.c = store.NewCommitter(s.durability, s.commit, func(ws []pgWork) pgWork {
		return func(b *pgx.Batch) {
			for _, w := range ws {
				w(b)
			}
		}
	}, func(*pgx.Batch) {})
}

// Commits returns how many write transactions the store has committed.
func (s *Store) Commits() int64 { return s.c.Commits() }

// submit queues a job; with wait it returns once the job is committed.
func (s *Store) submit(queue pgWork, wait bool) error { return s.c.Submit(queue, wait) }

// Flush returns once everything queued before it is committed. With
// nothing queued it returns at once.
func (s *Store) Flush() error { return s.c.Flush() }

// write routes one thread write by durability (store.Committer.Write).
func (s *Store) write(d store.Durability, k threadKey, queue pgWork, ends bool) error {
	return s.c.Write(d, k.thread, k.ns, queue, ends)
}

// send runs the statements that works queue as one transaction, and
// reports whether there were any.
func (s *Store) send(works []pgWork) (bool, error) {
	b := &pgx.Batch{}
	for _, w := range works {
		w(b)
	}
	if b.Len() == 0 {
		return false, nil
	}
	if err := s.sendMarked(b); err != nil { // reconnect.go
		return true, fmt.Errorf("commit to %s: %w", s.url, err)
	}
	return true, nil
}

// commit writes works in one transaction. If the server refused it (an
// error of one statement rolled it back), each work is committed on its
// own so one bad work does not fail the others. A failure whose outcome is
// unknown (the connection broke after the batch was sent) is not retried:
// appended items would be appended twice.
func (s *Store) commit(works []pgWork) ([]error, int) {
	n := 0
	send := func(ws []pgWork) error {
		sent, err := s.send(ws)
		if sent {
			n++
		}
		return err
	}
	errs := make([]error, len(works))
	err := send(works)
	if err != nil && pgconn.SafeToRetry(err) {
		err = send(works) // nothing reached the server: a new connection tries again
	}
	var pgErr *pgconn.PgError
	if err != nil && len(works) > 1 && errors.As(err, &pgErr) {
		for i, w := range works {
			errs[i] = send([]pgWork{w})
		}
		return errs, n
	}
	for i := range errs {
		errs[i] = err
	}
	return errs, n
}
