package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations bring the schema from version i to i+1 (migrations[i]). They
// only go forward, in order, each in its own transaction that also records
// its version in agent_lsp_schema. Never edit a released one: add the next.
var migrations = []string{
	// 1: sessions, checkpoints and approvals.
	`CREATE TABLE agent_lsp_sessions (
		id      text PRIMARY KEY,
		project text NOT NULL,
		updated timestamptz NOT NULL,
		body    bytea NOT NULL -- the JSON of store.Session, exact
	);
	CREATE TABLE agent_lsp_heads (
		thread  text NOT NULL,
		ns      text NOT NULL,
		step    bigint NOT NULL,
		status  text NOT NULL,
		next    bytea, -- the JSON of the tasks planned next; NULL when none
		updated timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (thread, ns)
	);
	CREATE TABLE agent_lsp_values (
		thread text NOT NULL,
		ns     text NOT NULL,
		name   text NOT NULL,
		body   bytea NOT NULL,
		PRIMARY KEY (thread, ns, name)
	);
	CREATE TABLE agent_lsp_items (
		thread text NOT NULL,
		ns     text NOT NULL,
		list   text NOT NULL,
		seq    bigserial,
		id     text, -- NULL for an item without ID
		body   bytea NOT NULL,
		PRIMARY KEY (thread, ns, list, seq)
	);
	CREATE UNIQUE INDEX agent_lsp_items_id ON agent_lsp_items (thread, ns, list, id);
	CREATE TABLE agent_lsp_pending (
		thread text NOT NULL,
		ns     text NOT NULL,
		task   text NOT NULL,
		body   bytea NOT NULL,
		PRIMARY KEY (thread, ns, task)
	);
	CREATE TABLE agent_lsp_approvals (
		key   bytea PRIMARY KEY,
		value bytea NOT NULL
	);`,
	// 2: leases, and indexes for listing and pruning sessions.
	`CREATE TABLE agent_lsp_leases (
		session    text PRIMARY KEY,
		holder     text NOT NULL,
		token      text NOT NULL,
		acquired   timestamptz NOT NULL DEFAULT now(),
		expires_at timestamptz NOT NULL
	);
	CREATE INDEX agent_lsp_sessions_project ON agent_lsp_sessions (project, updated);
	CREATE INDEX agent_lsp_sessions_updated ON agent_lsp_sessions (updated);`,
	// 3: the fence of a lease holder's writes: it fails the transaction of
	// a holder whose lease another process took over.
	`CREATE FUNCTION agent_lsp_fence(s text, t text) RETURNS void AS $$
	BEGIN
		IF NOT EXISTS (SELECT 1 FROM agent_lsp_leases WHERE session = s AND token = t) THEN
			RAISE EXCEPTION 'the lease of session % was lost: another process runs it now', s USING ERRCODE = 'P0001';
		END IF;
	END
	$$ LANGUAGE plpgsql;`,
	// 4: records (values, items, pending writes) are sealed with a CRC32C
	// (store.PackRecord): a binary of schema 3 would read a sealed record
	// as a raw one, so it must refuse the database instead.
	`COMMENT ON TABLE agent_lsp_items IS 'bodies are store.PackRecord records: sealed with a CRC32C since schema 4';`,
	// 5: each writer's last commit, which a writer whose connection broke
	// mid-commit reads to learn whether the commit landed; and where a
	// lease's holder runs, so that a holder on the same machine whose
	// process is gone is taken over at once.
	`CREATE TABLE agent_lsp_commits (
		writer  text PRIMARY KEY,
		seq     bigint NOT NULL,
		updated timestamptz NOT NULL DEFAULT now()
	);
	ALTER TABLE agent_lsp_leases
		ADD COLUMN machine text NOT NULL DEFAULT '', -- boot id and PID namespace; '' unknown
		ADD COLUMN pid     integer NOT NULL DEFAULT 0,
		ADD COLUMN started bigint NOT NULL DEFAULT 0; -- the process's start time, in clock ticks since boot`,
	// 6: whole steps: a checkpoint that does not follow its thread's stored
	// one (an earlier step of its run was not stored) fails its transaction.
	`CREATE FUNCTION agent_lsp_step_follows(t text, n text, s bigint) RETURNS void AS $$
	DECLARE
		stored bigint;
	BEGIN
		SELECT step INTO stored FROM agent_lsp_heads WHERE thread = t AND ns = n;
		IF FOUND AND s > stored + 1 THEN
			RAISE EXCEPTION 'step % does not follow the stored step %: an earlier step was not stored', s, stored USING ERRCODE = 'P0001';
		END IF;
	END
	$$ LANGUAGE plpgsql;`,
}

// SchemaVersion is the schema version this binary migrates to.
var SchemaVersion = len(migrations)

// ErrNewerSchema is returned by Open for a database migrated by a newer
// agent-lsp, whose tables this binary may not read or write correctly.
var ErrNewerSchema = errors.New("the database was migrated by a newer agent-lsp: upgrade agent-lsp")

// migrateLock is the key of the advisory lock that migrations hold: two
// processes opening a new database at once migrate one after the other.
const migrateLock int64 = 0x6167656e745f6c73 // "agent_ls"

// migrateTimeout bounds Open's migration, including waiting for another
// process's.
const migrateTimeout = time.Minute

// migrate brings the schema to version to (at most len(migrations)).
func migrate(ctx context.Context, pool *pgxpool.Pool, to int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer func() {
		// A lock left behind would block every later Open: if unlocking
		// fails, the connection goes rather than back to the pool.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrateLock); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS agent_lsp_schema (
		version integer PRIMARY KEY,
		applied timestamptz NOT NULL DEFAULT now(),
		by      text NOT NULL DEFAULT ''
	)`); err != nil {
		return fmt.Errorf("schema version table: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM agent_lsp_schema").Scan(&have); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("%w (schema version %d; this agent-lsp knows up to %d)", ErrNewerSchema, have, len(migrations))
	}
	host, _ := os.Hostname()
	by := fmt.Sprintf("agent-lsp on %s pid %d", host, os.Getpid())
	for v := have + 1; v <= to; v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO agent_lsp_schema (version, by) VALUES ($1, $2)", v, by)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate the schema to version %d: %w", v, err)
		}
	}
	return nil
}
