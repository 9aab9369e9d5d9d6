package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A commit whose connection breaks (a dropped connection, a database
// restart) has an unknown outcome: the server may have committed it before
// the answer was lost. Each commit therefore also records its writer's
// commit number (agent_lsp_commits); the writer reconnects with backoff, reads
// that number to learn whether the commit landed, and sends it again only
// if it did not (a transaction lands whole or not at all, so sending it
// again is safe). It gives up once the reconnect window passes: the
// longest lease this store holds (past it the lease may be another
// process's), else defaultReconnect.

// defaultReconnect is how long a store without leases tries to get a
// commit through a broken connection.
const defaultReconnect = 5 * time.Second

// Backoff between reconnect attempts.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = time.Second
)

// sqlMark records a commit's number in its transaction.
const sqlMark = `INSERT INTO agent_lsp_commits (writer, seq) VALUES ($1, $2)
	ON CONFLICT (writer) DO UPDATE SET seq = EXCLUDED.seq, updated = now()`

// sendMarked sends b, one commit's statements, as one transaction, with the
// commit's number; across a broken connection it reconnects and sends it
// again unless it landed. It runs on the committer's goroutine only (which
// owns commitSeq).
func (s *Store) sendMarked(b *pgx.Batch) error {
	s.commitSeq++
	seq := s.commitSeq
	b.Queue(sqlMark, s.writer, seq)
	window := s.reconnectWindow()
	start := time.Now()
	err := s.sendBatch(b)
	broke := err
	for backoff := firstBackoff; err != nil && connectionLost(err); backoff = min(2*backoff, maxBackoff) {
		if time.Since(start)+backoff > window {
			return &lostError{fmt.Errorf("%w; no reconnect got the commit through within %s", err, window)}
		}
		time.Sleep(backoff)
		landed, cerr := s.landed(seq)
		switch {
		case cerr != nil:
			continue // not reachable yet
		case landed:
			s.warn(fmt.Sprintf("the connection to %s broke during a commit (%v); reconnected after %s: it had landed", s.url, broke, time.Since(start).Round(time.Millisecond)))
			return nil
		}
		if err = s.sendBatch(b); err == nil {
			s.warn(fmt.Sprintf("the connection to %s broke during a commit (%v); reconnected after %s and committed again", s.url, broke, time.Since(start).Round(time.Millisecond)))
		}
	}
	return err
}

// sendBatch sends b's statements once, as a new batch: pgx records in a
// batch it sent the statements it prepared on that connection, which a new
// connection does not have.
func (s *Store) sendBatch(b *pgx.Batch) error {
	fresh := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, len(b.QueuedQueries))}
	for i, q := range b.QueuedQueries {
		fresh.QueuedQueries[i] = &pgx.QueuedQuery{SQL: q.SQL, Arguments: q.Arguments, Fn: q.Fn} // Fn reads the statement's result
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return s.pool.SendBatch(ctx, fresh).Close()
}

// landed reports whether this writer's commit seq is in the database.
func (s *Store) landed(seq int64) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var got int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM agent_lsp_commits WHERE writer = $1`, s.writer).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got >= seq, nil
}

// forgetWriter removes this writer's commit number (Close).
func (s *Store) forgetWriter() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.pool.Exec(ctx, `DELETE FROM agent_lsp_commits WHERE writer = $1`, s.writer)
}

// reconnectWindow is the longest lease this store holds, else defaultReconnect.
func (s *Store) reconnectWindow() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := time.Duration(0)
	for l := range s.leases {
		w = max(w, l.ttl)
	}
	if w == 0 {
		return defaultReconnect
	}
	return w
}

// connectionLost reports whether err is the connection's failure, not the
// server's refusal of a statement: a network error, a connection the
// server ended (class 08, connection exception; class 57, operator
// intervention: a shutdown or a restart).
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return len(pgErr.Code) == 5 && (pgErr.Code[:2] == "08" || pgErr.Code[:2] == "57")
	}
	return !errors.Is(err, context.Canceled)
}

// lostError is a commit that could not get through a broken connection. It
// is not safe to retry: the caller must not send the commit again.
type lostError struct{ err error }

func (e *lostError) Error() string     { return e.err.Error() }
func (e *lostError) Unwrap() error     { return e.err }
func (e *lostError) SafeToRetry() bool { return false }
