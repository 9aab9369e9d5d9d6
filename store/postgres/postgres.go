// Package postgres is a store.Store on PostgreSQL, shared by the machines
// of a team or a CI fleet: every process that opens the same database sees
// the same sessions, and a lease (Acquire) keeps two of them from running
// one session at once.
//
// It keeps the bbolt store's semantics: a checkpoint carries only what its
// step changed, list items are one row each (an upsert by ID replaces its
// row in place), pending writes are insert-if-absent and dropped when the
// step advances, and the session index entry of a checkpoint is written in
// its transaction. Durability modes are those of store.Durability, with the
// same committer: sync commits before Put returns (concurrent Puts share a
// commit), batched commits groups in the background (a crash loses at most
// the group being written and the one being gathered; a run's end is
// durable when Put returns), exit holds a run's steps until it ends.
//
// The schema is created, or migrated forward, by Open (schema.go). Tables
// are named agent_lsp_*; a search_path parameter in the URL puts them in
// another schema.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agent-lsp/agent-lsp/store"
)

// ConnectTimeout bounds connecting to the server (dial, TLS and
// authentication), unless the URL sets connect_timeout.
const ConnectTimeout = 5 * time.Second

// writeTimeout bounds one commit, so a server that stops answering fails
// the writes queued behind it instead of hanging the run.
const writeTimeout = time.Minute

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	pool       *pgxpool.Pool
	url        string // redacted
	durability store.Durability
	warn       func(string)
	holder     string
	c          *store.Committer[pgWork]
	closeOnce  sync.Once
	// writer names this store's commits in agent_lsp_commits; commitSeq
	// numbers them, owned by the committer's goroutine (reconnect.go).
	writer    string
	commitSeq int64
	machine   string // where this process runs, for leases (machine_linux.go); "" unknown

	mu     sync.Mutex
	leases map[*lease]struct{}
}

var _ store.Store = (*Store)(nil)

// Option configures Open.
type Option func(*Store)

// WithDefaultDurability sets the durability of runs that do not choose one
// (a checkpoint's Durability chooses per run).
func WithDefaultDurability(d store.Durability) Option { return func(s *Store) { s.durability = d } }

// WithWarn reports problems that do not stop the store: a record that
// cannot be read, a lease lost or taken over.
func WithWarn(warn func(string)) Option { return func(s *Store) { s.warn = warn } }

// WithHolder names this process in the leases it takes ("host pid 123" by
// default): another process's Acquire of the same session reports it.
func WithHolder(holder string) Option { return func(s *Store) { s.holder = holder } }

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://) rather than a store file.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

var (
	userinfoPassword = regexp.MustCompile(`(://[^:/@?#]*):[^@/?#]*@`)
	paramPassword    = regexp.MustCompile(`(?i)([?&]password=)[^&#]*`)
	queryPassword    = regexp.MustCompile(`(?i)(^|&)(password=)[^&]*`)
)

// Redact returns url with its password, in the user information or a
// password parameter, replaced by "xxxxx".
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		s := userinfoPassword.ReplaceAllString(rawURL, "${1}:xxxxx@")
		return paramPassword.ReplaceAllString(s, "${1}xxxxx")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	u.RawQuery = queryPassword.ReplaceAllString(u.RawQuery, "${1}${2}xxxxx")
	return u.String()
}

// passwordOf returns the password url carries, "" if none.
func passwordOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if m := userinfoPassword.FindStringSubmatch(rawURL); m != nil {
			return strings.TrimSuffix(strings.TrimPrefix(m[0], m[1]+":"), "@")
		}
		return ""
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			return p
		}
	}
	return u.Query().Get("password")
}

// redactedError carries an error whose text had a password taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// openError wraps err for Open: it names the redacted URL, and no password
// appears in its text even if a layer below put it there.
func openError(rawURL string, err error) error {
	msg := fmt.Sprintf("open postgres store %s: %v", Redact(rawURL), err)
	if p := passwordOf(rawURL); len(p) >= 4 {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
		if esc := url.QueryEscape(p); esc != p {
			msg = strings.ReplaceAll(msg, esc, "xxxxx")
		}
		if esc := url.PathEscape(p); esc != p {
			msg = strings.ReplaceAll(msg, esc, "xxxxx")
		}
	}
	return &redactedError{msg: msg, err: err}
}

// Open connects to the database at url (postgres:// or postgresql://),
// creates or migrates its schema, and returns the store. A server that is
// down or does not answer fails within ConnectTimeout (or the URL's
// connect_timeout); no error carries the URL's password.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	if !IsURL(rawURL) {
		// Not echoed: it may be a connection string with a password in it.
		return nil, errors.New("open postgres store: not a postgres:// or postgresql:// URL")
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, openError(rawURL, err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agent-lsp"
	}
	host, _ := os.Hostname()
	var w [12]byte
	rand.Read(w[:])
	s := &Store{url: Redact(rawURL), durability: store.DefaultDurability, warn: func(string) {},
		holder: fmt.Sprintf("%s pid %d", host, os.Getpid()), leases: map[*lease]struct{}{},
		writer: hex.EncodeToString(w[:]), machine: machineID()}
	for _, o := range opts {
		o(s)
	}
	if _, err := store.ParseDurability(string(s.durability)); err != nil {
		return nil, openError(rawURL, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, openError(rawURL, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+time.Second)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, openError(rawURL, err)
	}
	mctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	err = migrate(mctx, pool, len(migrations))
	cancel()
	if err != nil {
		pool.Close()
		return nil, openError(rawURL, err)
	}
	s.pool = pool
	s.startCommitter()
	return s, nil
}

// Path returns the database's URL with its password redacted.
func (s *Store) Path() string { return s.url }

// Name implements store.Store: the database's URL with its password
// redacted.
func (s *Store) Name() string { return s.url }

// Close writes what is queued (and the held steps of unfinished runs in
// exit mode), releases this store's leases and closes its connections.
func (s *Store) Close() error {
	err := s.c.Close()
	s.mu.Lock()
	var ls []*lease
	for l := range s.leases {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.release()
	}
	s.closeOnce.Do(func() {
		s.forgetWriter()
		s.pool.Close()
	})
	if err != nil {
		return fmt.Errorf("close postgres store: a batched write failed: %w", err)
	}
	return nil
}
