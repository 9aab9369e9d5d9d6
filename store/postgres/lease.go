package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agent-lsp/agent-lsp/store"
)

// A lease says which process runs a session: a row of agent_lsp_leases with
// its holder and an expiry on the database's clock, pushed forward by a
// heartbeat every ttl/3. A holder that vanishes (killed, stopped, its
// machine gone) stops pushing, and once its lease has expired another
// process may take it over. A lease also records where its holder runs
// (machineID, pid and the process's start time): a process on the same
// machine takes over at once the lease of a holder whose process is gone
// (a run that died with the database down, unable to release it).
type lease struct {
	s       *Store
	session string
	token   string
	ttl     time.Duration
	lost    func() // called once the lease is known lost; nil: nothing to call
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// MinLeaseTTL is the shortest lease Acquire takes.
const MinLeaseTTL = 100 * time.Millisecond

const (
	// sqlAcquire takes the lease when nobody holds it or its holder's has
	// expired; it returns the expired holder taken over ("" if none).
	sqlAcquire = `WITH old AS (SELECT holder FROM agent_lsp_leases WHERE session = $1)
		INSERT INTO agent_lsp_leases AS l (session, holder, token, acquired, expires_at, machine, pid, started)
		VALUES ($1, $2, $3, now(), now() + $4::float8 * interval '1 second', $5, $6, $7)
		ON CONFLICT (session) DO UPDATE SET holder = EXCLUDED.holder, token = EXCLUDED.token,
			acquired = EXCLUDED.acquired, expires_at = EXCLUDED.expires_at,
			machine = EXCLUDED.machine, pid = EXCLUDED.pid, started = EXCLUDED.started
		WHERE l.expires_at <= now()
		RETURNING coalesce((SELECT holder FROM old), '')`
	sqlHolder = `SELECT holder, extract(epoch FROM expires_at - now()) FROM agent_lsp_leases WHERE session = $1`
	// sqlHolderProc reads where a live lease's holder runs.
	sqlHolderProc = `SELECT token, machine, pid, started FROM agent_lsp_leases WHERE session = $1`
	// sqlTakeOver takes a lease from the holder whose token it names.
	sqlTakeOver = `UPDATE agent_lsp_leases SET holder = $2, token = $3, acquired = now(),
			expires_at = now() + $4::float8 * interval '1 second', machine = $5, pid = $6, started = $7
		WHERE session = $1 AND token = $8`
	sqlRenew = `UPDATE agent_lsp_leases SET expires_at = now() + $3::float8 * interval '1 second' WHERE session = $1 AND token = $2`
	sqlFree  = `DELETE FROM agent_lsp_leases WHERE session = $1 AND token = $2`
)

// Acquire takes the lease on session for this store's holder and keeps it
// (a heartbeat every ttl/3) until release is called or the store is
// closed. lost (if not nil) is called once, from the heartbeat, when the
// lease is lost: another holder took it over, or no renewal got through
// for a whole ttl (it may have expired): the run it guards must stop. If another holder's lease is live, it fails with an error that
// wraps store.ErrBusy and names that holder. An expired lease is taken
// over (WithWarn reports whose). A store whose lease was taken over while
// it could not renew it (it was stopped, or cut off from the database)
// learns it at its next heartbeat, through WithWarn.
func (s *Store) Acquire(ctx context.Context, session string, ttl time.Duration, lost func()) (release func(), err error) {
	if ttl < MinLeaseTTL {
		return nil, fmt.Errorf("lease on session %s: ttl %s is under %s", session, ttl, MinLeaseTTL)
	}
	var tok [16]byte
	rand.Read(tok[:])
	l := &lease{s: s, session: session, token: hex.EncodeToString(tok[:]), ttl: ttl, lost: lost,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	rctx, cancel := readCtx(ctx)
	defer cancel()
	pid := os.Getpid()
	started, _ := processStart(pid)
	for attempt := 0; ; attempt++ {
		var was string
		err := s.pool.QueryRow(rctx, sqlAcquire, session, s.holder, l.token, ttl.Seconds(), s.machine, pid, started).Scan(&was)
		if err == nil {
			if was != "" {
				s.warn(fmt.Sprintf("took over the expired lease of session %s from %s", session, was))
			}
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("lease on session %s: %w", session, err)
		}
		var holder string
		var left float64
		err = s.pool.QueryRow(rctx, sqlHolder, session).Scan(&holder, &left)
		if errors.Is(err, pgx.ErrNoRows) && attempt < 3 {
			continue // released meanwhile: try again
		}
		if err != nil {
			return nil, fmt.Errorf("lease on session %s: %w", session, err)
		}
		if left <= 0 && attempt < 3 {
			continue // expired meanwhile
		}
		if took, err := s.takeOverDead(rctx, l, holder, pid, started); err != nil {
			return nil, fmt.Errorf("lease on session %s: %w", session, err)
		} else if took {
			break
		}
		return nil, fmt.Errorf("session %s: %w: %s holds it (its lease runs %s more unless renewed)",
			session, store.ErrBusy, holder, time.Duration(left*float64(time.Second)).Round(time.Millisecond))
	}
	s.mu.Lock()
	s.leases[l] = struct{}{}
	s.mu.Unlock()
	go l.heartbeat()
	return l.release, nil
}

// takeOverDead takes l's session's lease from its holder when that holder
// ran on this machine (machineID) and its process is gone: no process has
// its pid, or one that started at another time. It reports whether it did.
func (s *Store) takeOverDead(ctx context.Context, l *lease, holder string, pid int, started int64) (bool, error) {
	if s.machine == "" {
		return false, nil
	}
	var token, machine string
	var hpid int
	var hstarted int64
	err := s.pool.QueryRow(ctx, sqlHolderProc, l.session).Scan(&token, &machine, &hpid, &hstarted)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if machine != s.machine || hpid <= 0 {
		return false, nil
	}
	if now, alive := processStart(hpid); alive && now == hstarted {
		return false, nil
	}
	ct, err := s.pool.Exec(ctx, sqlTakeOver, l.session, s.holder, l.token, l.ttl.Seconds(), s.machine, pid, started, token)
	if err != nil || ct.RowsAffected() == 0 {
		return false, err // another process took it first
	}
	s.warn(fmt.Sprintf("took over the lease of session %s from %s at once: it ran on this machine and its process (pid %d) is gone", l.session, holder, hpid))
	return true, nil
}

func (l *lease) heartbeat() {
	defer close(l.stopped)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	renewed := time.Now()
	lose := func() {
		if l.lost != nil {
			l.lost()
		}
	}
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		ct, err := l.s.pool.Exec(ctx, sqlRenew, l.session, l.token, l.ttl.Seconds())
		cancel()
		switch {
		case err != nil && time.Since(renewed) >= l.ttl:
			l.s.warn(fmt.Sprintf("the lease of session %s may have expired: no renewal got through for %s (%v); its run stops", l.session, l.ttl, err))
			lose()
			return
		case err != nil:
			// The next beat tries again; if none gets through before the
			// lease expires, another process may take the session over.
			l.s.warn(fmt.Sprintf("renewing the lease of session %s failed: %v", l.session, err))
		case ct.RowsAffected() == 0:
			holder := "another process"
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
			var h string
			var left float64
			if err := l.s.pool.QueryRow(ctx, sqlHolder, l.session).Scan(&h, &left); err == nil {
				holder = h
			}
			cancel()
			l.s.warn(fmt.Sprintf("the lease of session %s was lost: it expired and %s holds it now; its run stops", l.session, holder))
			lose()
			return
		default:
			renewed = time.Now()
		}
	}
}

// fenceToken returns the token of this store's lease on session, if it
// holds one: the writes of that session then carry a fence (sqlFence), so
// that they fail once another process took the lease over.
func (s *Store) fenceToken(session string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.leases {
		if l.session == session {
			return l.token, true
		}
	}
	return "", false
}

// Holder returns who holds session's lease now, if anyone does (a live,
// unexpired lease): the session runs there.
func (s *Store) Holder(ctx context.Context, session string) (string, bool, error) {
	rctx, cancel := readCtx(ctx)
	defer cancel()
	var holder string
	var left float64
	err := s.pool.QueryRow(rctx, sqlHolder, session).Scan(&holder, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.readErr(err)
	}
	return holder, left > 0, nil
}

// sqlFence fails the transaction it is in unless the lease with the token
// still holds the session.
const sqlFence = `SELECT agent_lsp_fence($1, $2)`

// release stops the heartbeat and frees the lease, trying again with
// backoff for up to the lease's ttl (after which it expires anyway) when
// the database cannot be reached; it is idempotent.
func (l *lease) release() {
	l.once.Do(func() {
		close(l.stop)
		<-l.stopped
		start := time.Now()
		for backoff := firstBackoff; ; backoff = min(2*backoff, maxBackoff) {
			ctx, cancel := context.WithTimeout(context.Background(), max(l.ttl/3, time.Second))
			_, err := l.s.pool.Exec(ctx, sqlFree, l.session, l.token)
			cancel()
			if err == nil {
				break
			}
			if time.Since(start)+backoff > l.ttl {
				l.s.warn(fmt.Sprintf("releasing the lease of session %s failed (it expires in %s): %v", l.session, l.ttl, err))
				break
			}
			time.Sleep(backoff)
		}
		l.s.mu.Lock()
		delete(l.s.leases, l)
		l.s.mu.Unlock()
	})
}
