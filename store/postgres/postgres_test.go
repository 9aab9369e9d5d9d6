//go:build unix

package postgres

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres/pgtest"
	"github.com/agent-lsp/agent-lsp/store/storetest"
)

// The tests that need a server read its URL from AGENT_LSP_TEST_POSTGRES:
//
//	eval "$(scripts/postgres.sh)"
//	go test ./store/postgres/
//	scripts/postgres.sh stop "$AGENT_LSP_TEST_POSTGRES_DIR"
//
// Without it they skip, except in CI (CI=true), where they fail. Each test
// works in a schema of its own (search_path in the URL), dropped after it.
const urlEnv = pgtest.Env

func serverURL(t testing.TB) string { t.Helper(); return pgtest.ServerURL(t) }

func freshSchema(t testing.TB) string { t.Helper(); return pgtest.FreshSchema(t) }

// open opens a store that is closed when the test ends, if it was not before.
func open(t testing.TB, u string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), u, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	serverURL(t)
	for _, d := range []store.Durability{store.Sync, store.Batched} {
		t.Run("durability="+string(d), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				return open(t, freshSchema(t), WithDefaultDurability(d))
			})
		})
	}
}

func TestIsURLAndRedact(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://u@h/db": true, "POSTGRES://h": true,
		"/home/u/.local/state/agent-lsp/sessions.db": false, "host=h dbname=db": false, "mysql://h/db": false, "": false,
	} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
	for in, want := range map[string]string{
		"postgres://u:s3cret@h:5432/db?sslmode=disable":        "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                                    "postgres://u@h/db",
		"postgres://h/db?user=u&password=s3cret":               "postgres://h/db?user=u&password=xxxxx",
		"postgres://h/db?password=s3cret&user=u":               "postgres://h/db?password=xxxxx&user=u",
		"postgresql://u:p%40ss@h/db":                           "postgresql://u:xxxxx@h/db",
		"postgres://u:s3cret@h:bad port/db":                    "postgres://u:xxxxx@h:bad port/db",
		"postgres://u:s3cret@h:bad port/db?password=s3cret&x=": "postgres://u:xxxxx@h:bad port/db?password=xxxxx&x=",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if p := passwordOf(in); strings.Contains(in, "s3cret") && p != "s3cret" {
			t.Errorf("passwordOf(%q) = %q", in, p)
		}
	}
}

// Open fails with one clear error, within a bounded time, for a URL that
// is wrong, a port where nothing listens, a server that never answers and
// a wrong password; no error shows the password.
func TestOpenErrors(t *testing.T) {
	const pass = "Sekr1t-pass"
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}()
	silent := silentListener(t)
	cases := map[string]struct {
		url, want string
		bound     time.Duration
	}{
		"not a URL":     {"host=127.0.0.1 password=" + pass, "not a postgres:// or postgresql:// URL", time.Second},
		"bad port":      {"postgres://u:" + pass + "@127.0.0.1:notaport/db", "cannot parse", time.Second},
		"nothing there": {"postgres://u:" + pass + "@" + closed + "/db?sslmode=disable", "connect", 3 * time.Second},
		"never answers": {"postgres://u:" + pass + "@" + silent + "/db?sslmode=disable", "timeout", ConnectTimeout + 3*time.Second},
		"password in a parameter": {"postgres://" + closed + "/db?sslmode=disable&user=u&password=" + pass, "connect",
			3 * time.Second},
	}
	if u := os.Getenv(urlEnv); u != "" {
		pu, _ := url.Parse(u)
		pu.User = url.UserPassword(pu.User.Username(), pass)
		cases["wrong password"] = struct {
			url, want string
			bound     time.Duration
		}{pu.String(), "password authentication failed", 3 * time.Second}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(context.Background(), c.url)
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Logf("%s: %s", took.Round(time.Millisecond), msg)
			if strings.Contains(msg, pass) {
				t.Errorf("the error shows the password: %s", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("the error does not say %q: %s", c.want, msg)
			}
			if IsURL(c.url) && !strings.Contains(msg, Redact(c.url)) {
				t.Errorf("the error does not name the redacted URL %s: %s", Redact(c.url), msg)
			}
			if took > c.bound {
				t.Errorf("took %s, over %s", took, c.bound)
			}
		})
	}
}

// silentListener is the address of a loopback listener that accepts
// connections and never answers; they are closed when the test ends.
func silentListener(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex // guards held
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

func TestPath(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u)
	defer s.Close()
	if p := passwordOf(u); s.Path() != Redact(u) || p != "" && strings.Contains(s.Path(), p) {
		t.Fatalf("Path() = %s", s.Path())
	}
}

func versions(t *testing.T, u string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT version FROM agent_lsp_schema ORDER BY version")
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func wantVersions(t *testing.T, got []int) {
	t.Helper()
	if len(got) != SchemaVersion {
		t.Fatalf("schema versions %v, want 1..%d", got, SchemaVersion)
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("schema versions %v, want 1..%d", got, SchemaVersion)
		}
	}
}

// An empty database is migrated to the current schema; opening it again
// migrates nothing.
func TestMigrateEmpty(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u)
	s.Close()
	wantVersions(t, versions(t, u))
	s = open(t, u)
	defer s.Close()
	wantVersions(t, versions(t, u))
	if SchemaVersion < 2 {
		t.Fatal("the migration test from the previous version needs two versions")
	}
}

// A database of the previous version (1: no leases) with data in it is
// migrated to the current one and its data reads back.
func TestMigrateFromPrevious(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	pool := pgxPoolFor(t, u)
	if err := migrate(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, u); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after migrating to 1: %v", got)
	}
	// What a version-1 binary wrote.
	sess, _ := json.Marshal(store.Session{ID: "old", Project: "p", Title: "from v1", Status: store.StatusDone, Updated: time.Now()})
	next, _ := json.Marshal([]store.Task{{ID: "t1", Node: "agent"}})
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO agent_lsp_sessions (id, project, updated, body) VALUES ('old', 'p', now(), $1)", []any{sess}},
		{"INSERT INTO agent_lsp_heads (thread, ns, step, status, next) VALUES ('old', '', 4, 'done', $1)", []any{next}},
		{"INSERT INTO agent_lsp_values (thread, ns, name, body) VALUES ('old', '', 'n', '4')", nil},
		{"INSERT INTO agent_lsp_items (thread, ns, list, id, body) VALUES ('old', '', 'm', 'a', '\"A\"'), ('old', '', 'm', NULL, '\"B\"')", nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if _, err := pool.Exec(ctx, "SELECT 1 FROM agent_lsp_leases"); err == nil {
		t.Fatal("version 1 has a leases table")
	}
	s := open(t, u)
	defer s.Close()
	wantVersions(t, versions(t, u))
	st, err := s.Load(ctx, "old", "")
	if err != nil || st.Step != 4 || st.Status != store.StatusDone || string(st.Values["n"]) != "4" || len(st.Next) != 1 ||
		len(st.Lists["m"]) != 2 || st.Lists["m"][0].ID != "a" || string(st.Lists["m"][1].Body) != `"B"` {
		t.Fatalf("old checkpoint: %+v %v", st, err)
	}
	if got, err := s.Session(ctx, "old"); err != nil || got.Title != "from v1" {
		t.Fatalf("old session: %+v %v", got, err)
	}
	release, err := s.Acquire(ctx, "old", time.Second, nil)
	if err != nil {
		t.Fatalf("lease after the migration: %v", err)
	}
	release()
}

// Processes opening a new database at once migrate it once, one after
// the other (the advisory lock), and all succeed.
func TestMigrateConcurrently(t *testing.T) {
	u := freshSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), u)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantVersions(t, versions(t, u))
}

// A database migrated by a newer agent-lsp is refused.
func TestNewerSchemaRefused(t *testing.T) {
	u := freshSchema(t)
	open(t, u).Close()
	ctx := context.Background()
	pool := pgxPoolFor(t, u)
	if _, err := pool.Exec(ctx, "INSERT INTO agent_lsp_schema (version) VALUES ($1)", SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, u)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("open: %v", err)
	}
}

// Sync Puts of concurrent sessions share commits, and all are durable.
func TestGroupCommitSync(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, WithDefaultDurability(store.Sync))
	ctx := context.Background()
	before := s.Commits()
	const sessions, steps = 16, 30
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step := 0; step < steps; step++ {
				if err := s.Put(ctx, stepCheckpoint(fmt.Sprint("g", i), step, steps)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	commits := s.Commits() - before
	t.Logf("%d commits for %d steps", commits, sessions*steps)
	if commits >= sessions*steps {
		t.Errorf("%d commits for %d steps: no commit was shared", commits, sessions*steps)
	}
	s.Close()
	other := open(t, u)
	defer other.Close()
	for i := 0; i < sessions; i++ {
		checkPrefix(t, other, fmt.Sprint("g", i), steps-1, true)
	}
}

// After a batched group failed, the next step of the thread whose write
// failed fails with that write's error (its run must not go on as if its
// steps were stored); the other threads' steps of the group were committed
// on their own, and their runs go on.
func TestBatchedFailsAfterAFailedGroup(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, WithDefaultDurability(store.Batched))
	defer s.Close()
	ctx := context.Background()
	if err := s.Put(ctx, stepCheckpoint("good", 0, 10)); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL's text refuses NUL: the server rolls the group back.
	bad := store.Checkpoint{Thread: "bad", Step: 0, Status: store.StatusRunning, Values: map[string]json.RawMessage{"bad\x00name": json.RawMessage(`1`)}}
	if err := s.Put(ctx, bad); err != nil {
		t.Fatalf("a batched Put is queued, not checked: %v", err)
	}
	for step := 1; step < 5; step++ {
		if err := s.Put(ctx, stepCheckpoint("good", step, 10)); err != nil {
			t.Fatalf("good step %d: %v", step, err)
		}
	}
	bad.Step, bad.Values = 1, nil
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		err = s.Put(ctx, bad)
		bad.Step++
	}
	if err == nil || !strings.Contains(err.Error(), "an earlier write of this run failed") || !strings.Contains(err.Error(), "0x00") {
		t.Fatalf("the failed thread's step after the failed group: %v", err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, s, "good", 4, false)
	if _, err := s.Load(ctx, "bad", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed thread: %v, want nothing stored", err)
	}
}

// A checkpoint that does not follow its thread's stored one is refused:
// storing it would tear the thread's state.
func TestStepGapRefused(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, WithDefaultDurability(store.Sync))
	defer s.Close()
	ctx := context.Background()
	for step := range 2 {
		if err := s.Put(ctx, stepCheckpoint("t", step, 10)); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Put(ctx, stepCheckpoint("t", 3, 10))
	if err == nil || !strings.Contains(err.Error(), "step 3 does not follow the stored step 1") {
		t.Fatalf("a step after a gap: %v", err)
	}
	checkPrefix(t, s, "t", 1, false)
	if err := s.Put(ctx, stepCheckpoint("t", 1, 10)); err != nil { // a run's end at its stored step
		t.Fatal(err)
	}
}

// Exit mode writes a run's steps when it ends, or when the store closes.
func TestExitHeldUntilEndOrClose(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	s := open(t, u, WithDefaultDurability(store.Exit))
	other := open(t, u)
	defer other.Close()
	for step := 0; step < 5; step++ {
		if err := s.Put(ctx, stepCheckpoint("held", step, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Load(ctx, "held", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("exit mode wrote a running step: %v", err)
	}
	for step := 0; step < 3; step++ {
		if err := s.Put(ctx, stepCheckpoint("ends", step, 3)); err != nil {
			t.Fatal(err)
		}
	}
	checkPrefix(t, other, "ends", 2, true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, other, "held", 4, false)
	if err := s.Put(ctx, stepCheckpoint("held", 5, 100)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
}

// stepCheckpoint is step of a run of n steps: it sets n to step, appends
// item m<step> and rewrites item "last" in place; the last step is done.
func stepCheckpoint(thread string, step, n int) store.Checkpoint {
	status := store.StatusRunning
	if step == n-1 {
		status = store.StatusDone
	}
	body := fmt.Sprintf(`{"step":%d,"text":%q}`, step, strings.Repeat("lorem ipsum ", 40))
	ops := []store.Op{{Kind: store.OpUpsert, ID: fmt.Sprintf("m%04d", step), Body: json.RawMessage(body)}}
	if step == 0 {
		ops = append(ops, store.Op{Kind: store.OpUpsert, ID: "last", Body: json.RawMessage("0")})
	} else {
		ops = append(ops, store.Op{Kind: store.OpUpsert, ID: "last", Body: json.RawMessage(strconv.Itoa(step))})
	}
	return store.Checkpoint{Thread: thread, Step: step, Status: status,
		Values: map[string]json.RawMessage{"n": json.RawMessage(strconv.Itoa(step))},
		Lists:  map[string][]store.Op{"m": ops},
		Next:   []store.Task{{ID: fmt.Sprint("task-", step+1), Node: "agent"}}}
}

// checkPrefix checks that thread holds exactly steps 0..step of
// stepCheckpoint, each whole (atomic), and returns the state.
func checkPrefix(t *testing.T, s store.Store, thread string, step int, done bool) *store.State {
	t.Helper()
	st, err := s.Load(context.Background(), thread, "")
	if err != nil {
		t.Fatalf("%s: %v", thread, err)
	}
	if st.Step != step || string(st.Values["n"]) != strconv.Itoa(step) || (st.Status == store.StatusDone) != done {
		t.Fatalf("%s: step %d status %s n=%s, want step %d", thread, st.Step, st.Status, st.Values["n"], step)
	}
	items := st.Lists["m"]
	if len(items) != step+2 {
		t.Fatalf("%s: %d items at step %d", thread, len(items), step)
	}
	for i, it := range items {
		switch {
		case i == 1:
			if it.ID != "last" || string(it.Body) != strconv.Itoa(step) {
				t.Fatalf("%s: item 1 = %s=%s, want last=%d (replaced in place)", thread, it.ID, it.Body, step)
			}
		default:
			k := i
			if i > 1 {
				k = i - 1
			}
			if it.ID != fmt.Sprintf("m%04d", k) || !strings.HasPrefix(string(it.Body), fmt.Sprintf(`{"step":%d,`, k)) {
				t.Fatalf("%s: item %d = %s", thread, i, it.ID)
			}
		}
	}
	return st
}

// pgxPoolFor connects to u directly, around the store.
func pgxPoolFor(t *testing.T, u string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestLeases(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	var warned []string
	var mu sync.Mutex
	a := open(t, u, WithHolder("alpha"))
	b := open(t, u, WithHolder("beta"), WithWarn(func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }))
	defer b.Close()
	release, err := a.Acquire(ctx, "s1", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "s1", time.Second, nil)
	if !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), "alpha") || !strings.Contains(err.Error(), "s1") {
		t.Fatalf("second holder: %v", err)
	}
	t.Logf("busy: %v", err)
	// The holder itself cannot take it twice either.
	if _, err := a.Acquire(ctx, "s1", time.Second, nil); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("the holder's second acquire: %v", err)
	}
	// Another session is free.
	rel2, err := b.Acquire(ctx, "s2", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel2()
	// The heartbeat keeps the lease past its ttl.
	time.Sleep(2500 * time.Millisecond)
	if _, err := b.Acquire(ctx, "s1", time.Second, nil); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("after three ttls with a heartbeat: %v", err)
	}
	release()
	release() // idempotent
	relB, err := b.Acquire(ctx, "s1", time.Second, nil)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// Close releases the store's leases.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	relB() // after Close: nothing to do
	relA, err := a.Acquire(ctx, "s1", time.Second, nil)
	if err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
	relA()
	a.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 0 {
		t.Fatalf("warnings: %q", warned)
	}
	if _, err := a.Acquire(ctx, "s3", time.Millisecond, nil); err == nil {
		t.Fatal("a lease of 1ms")
	}
}

// Child processes: TestMain runs one instead of the tests when childEnv is set.
const (
	childEnv    = "AGENT_LSP_PG_TEST_CHILD"
	childURLEnv = "AGENT_LSP_PG_TEST_CHILD_URL"
	childArgEnv = "AGENT_LSP_PG_TEST_CHILD_ARG"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "lease":
		leaseChild()
	case "writer":
		writerChild()
	}
}

// leaseChild holds a lease on session "shared" until its standard input
// closes, printing what it is warned of.
func leaseChild() {
	out := make(chan string, 16)
	go func() {
		for line := range out {
			fmt.Println(line)
		}
	}()
	holder := fmt.Sprintf("lease-child pid %d", os.Getpid())
	s, err := Open(context.Background(), os.Getenv(childURLEnv), WithHolder(holder), WithWarn(func(m string) { out <- "warn: " + m }))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	ttl, _ := time.ParseDuration(os.Getenv(childArgEnv))
	release, err := s.Acquire(context.Background(), "shared", ttl, func() { out <- "lost: the run stops" })
	if err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	out <- "holding " + holder
	io.Copy(io.Discard, os.Stdin)
	release()
	s.Close()
	time.Sleep(100 * time.Millisecond)
}

// writerChild runs 200 steps of stepCheckpoint on thread "crash",
// reporting each once Put returned, then waits to be killed.
func writerChild() {
	d := store.Durability(os.Getenv(childArgEnv))
	s, err := Open(context.Background(), os.Getenv(childURLEnv), WithDefaultDurability(d))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	w := bufio.NewWriter(os.Stdout)
	for step := 0; step < 200; step++ {
		if err := s.Put(context.Background(), stepCheckpoint("crash", step, 200)); err != nil {
			fmt.Fprintln(w, "error", err)
			w.Flush()
			os.Exit(4)
		}
		fmt.Fprintf(w, "step %d\n", step)
		w.Flush()
	}
	fmt.Fprintln(w, "finished")
	w.Flush()
	time.Sleep(time.Minute)
	os.Exit(5)
}

func startChild(t *testing.T, kind, u, arg string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childURLEnv+"="+u, childArgEnv+"="+arg)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewScanner(stdout)
}

// lines feeds sc's lines to a channel.
func lines(sc *bufio.Scanner) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func waitLine(t *testing.T, ch <-chan string, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("the child exited before saying %q", prefix)
			}
			if strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-deadline:
			t.Fatalf("the child did not say %q within %s", prefix, within)
		}
	}
}

// Two processes and one session: the second is refused, naming the first;
// once the first is stopped (SIGSTOP: it neither renews nor releases) past
// its lease's ttl, the second takes the session over, and the first, let
// go on, learns it lost the lease.
func TestLeaseAcrossProcesses(t *testing.T) {
	u := freshSchema(t)
	const ttl = 900 * time.Millisecond
	cmd, stdin, sc := startChild(t, "lease", u, ttl.String())
	out := lines(sc)
	holding := waitLine(t, out, "holding ", 15*time.Second)
	holder := strings.TrimPrefix(holding, "holding ")
	ctx := context.Background()
	var warned []string
	var mu sync.Mutex
	s := open(t, u, WithHolder("parent"), WithWarn(func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }))
	defer s.Close()
	_, err := s.Acquire(ctx, "shared", ttl, nil)
	if !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), holder) {
		t.Fatalf("acquire while %s holds it: %v", holder, err)
	}
	t.Logf("refused: %v", err)
	// Alive, it keeps the lease past its ttl.
	time.Sleep(2 * ttl)
	if _, err := s.Acquire(ctx, "shared", ttl, nil); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("the live holder lost its lease: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var release func()
	for {
		release, err = s.Acquire(ctx, "shared", ttl, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrBusy) || time.Since(stopped) > 3*ttl {
			t.Fatalf("take over from a stopped holder: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(stopped); took < ttl/2 {
		t.Fatalf("taken over %s after the holder stopped: its lease ran %s", took, ttl)
	} else {
		t.Logf("taken over %s after the holder stopped (ttl %s)", took.Round(time.Millisecond), ttl)
	}
	defer release()
	mu.Lock()
	if len(warned) != 1 || !strings.Contains(warned[0], holder) {
		t.Errorf("the take-over was not reported: %q", warned)
	}
	mu.Unlock()
	cmd.Process.Signal(syscall.SIGCONT)
	lost := waitLine(t, out, "warn: the lease of session shared was lost", 3*ttl)
	if !strings.Contains(lost, "parent") {
		t.Errorf("the old holder is not told who holds it: %s", lost)
	}
	waitLine(t, out, "lost: the run stops", 3*ttl) // the lease's lost callback: the run it guards stops
	// It does not get it back: the new holder keeps it.
	time.Sleep(ttl)
	stdin.Close()
	cmd.Wait()
	if _, err := open(t, u, WithHolder("third")).Acquire(ctx, "shared", ttl, nil); !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), "parent") {
		t.Fatalf("after the old holder left: %v", err)
	}
}

// A writer killed (SIGKILL) in the middle of a run loses at most what its
// durability mode allows; every step another store loads is whole.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	serverURL(t)
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		for _, killAt := range []int{0, 57, 150, -1} { // -1: after the run reported done
			name := fmt.Sprintf("%s/kill-after-step-%d", d, killAt)
			if killAt < 0 {
				name = fmt.Sprintf("%s/kill-after-done", d)
			}
			t.Run(name, func(t *testing.T) {
				u := freshSchema(t)
				cmd, _, sc := startChild(t, "writer", u, string(d))
				reported := -1
				for sc.Scan() {
					line := sc.Text()
					if strings.HasPrefix(line, "error") {
						t.Fatalf("child: %s", line)
					}
					var n int
					if _, err := fmt.Sscanf(line, "step %d", &n); err == nil {
						reported = n
						if killAt >= 0 && n >= killAt {
							break
						}
					}
					if line == "finished" {
						break
					}
				}
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				s := open(t, u)
				defer s.Close()
				st, err := s.Load(context.Background(), "crash", "")
				durable := -1
				if err == nil {
					durable = st.Step
					checkPrefix(t, s, "crash", durable, durable == 199)
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				t.Logf("reported step %d, durable %d", reported, durable)
				switch {
				case killAt < 0 && durable != 199:
					t.Fatalf("the run reported done; the store has step %d", durable)
				case d == store.Sync && durable < reported:
					t.Fatalf("sync: step %d was reported, only %d is durable", reported, durable)
				case d == store.Batched && reported-durable > 2*store.BatchSteps:
					t.Fatalf("batched: lost %d steps, more than two groups of %d", reported-durable, store.BatchSteps)
				case d == store.Exit && killAt >= 0 && durable != -1:
					t.Fatalf("exit: step %d of an unfinished run is stored", durable)
				}
			})
		}
	}
}

// proxy forwards 127.0.0.1 connections to target until cut, which closes
// them all and refuses new ones.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) cut() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A server that goes away in the middle of a run fails the next write
// and read at once with an error, in every mode; nothing hangs, and the
// store still closes.
func TestServerGoneMidRun(t *testing.T) {
	u := freshSchema(t)
	for _, d := range []store.Durability{store.Sync, store.Batched} {
		t.Run(string(d), func(t *testing.T) {
			pu, _ := url.Parse(u)
			p := newProxy(t, pu.Host)
			pu.Host = p.l.Addr().String()
			s := open(t, pu.String(), WithDefaultDurability(d))
			ctx := context.Background()
			thread := "gone-" + string(d)
			if err := s.Put(ctx, stepCheckpoint(thread, 0, 10)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			p.cut()
			start := time.Now()
			var err error
			for step := 1; step < 10 && err == nil; step++ {
				err = s.Put(ctx, stepCheckpoint(thread, step, 10))
				if err == nil && d == store.Batched {
					err = s.Flush()
				}
			}
			if err == nil {
				t.Fatal("writes went on with the server gone")
			}
			t.Logf("%s: %v", time.Since(start).Round(time.Millisecond), err)
			_, lerr := s.Load(ctx, thread, "")
			if lerr == nil {
				t.Fatal("a load with the server gone")
			}
			if pw := passwordOf(u); pw != "" && (strings.Contains(err.Error(), pw) || strings.Contains(lerr.Error(), pw)) {
				t.Fatalf("an error shows the password: %v; %v", err, lerr)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("failing took %s", took)
			}
			s.Close()
			other := open(t, u)
			defer other.Close()
			checkPrefix(t, other, thread, 0, false)
		})
	}
}

// A checkpoint and its session index entry commit together: a checkpoint
// the server refuses leaves the entry as it was.
func TestIndexInCheckpointTransaction(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, WithDefaultDurability(store.Sync))
	defer s.Close()
	ctx := context.Background()
	sess := store.Session{ID: "s", Project: "p", Status: store.StatusRunning, Updated: time.Now(), Messages: 1}
	cp := stepCheckpoint("s", 0, 10)
	cp.Index = &sess
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	bad := stepCheckpoint("s", 1, 10)
	bad.Lists["bad\x00list"] = []store.Op{{Body: json.RawMessage("1")}}
	next := sess
	next.Messages = 2
	bad.Index = &next
	if err := s.Put(ctx, bad); err == nil {
		t.Fatal("the server took a NUL in a list name")
	}
	if got, err := s.Session(ctx, "s"); err != nil || got.Messages != 1 {
		t.Fatalf("the index entry of a refused checkpoint: %+v %v", got, err)
	}
	checkPrefix(t, s, "s", 0, false)
}

// A session record that cannot be decoded is left out of the list and
// reported.
func TestUndecodableSessionSkipped(t *testing.T) {
	u := freshSchema(t)
	var warned []string
	s := open(t, u, WithWarn(func(m string) { warned = append(warned, m) }))
	defer s.Close()
	ctx := context.Background()
	s.PutSession(ctx, store.Session{ID: "good"})
	pool := pgxPoolFor(t, u)
	if _, err := pool.Exec(ctx, "INSERT INTO agent_lsp_sessions (id, project, updated, body) VALUES ('bad', '', now(), '{not json')"); err != nil {
		t.Fatal(err)
	}
	list, err := s.Sessions(ctx, "")
	if err != nil || len(list) != 1 || list[0].ID != "good" {
		t.Fatalf("%v %v", list, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `"bad"`) {
		t.Fatalf("warned %q", warned)
	}
}
