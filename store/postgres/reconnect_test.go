//go:build unix

package postgres

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// faultProxy forwards 127.0.0.1 connections to target, and on demand loses
// the next message one way (closing that connection), or every connection
// for a while.
type faultProxy struct {
	l      net.Listener
	target string

	mu          sync.Mutex // guards the fields below
	conns       []net.Conn
	loseReply   bool      // the next bytes from the server are dropped, the connection closed
	loseRequest bool      // the next bytes from the client are dropped, the connection closed
	downUntil   time.Time // connections until then are closed at once
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{l: l, target: target}
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.drop()
	})
	return p
}

func (p *faultProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := time.Now().Before(p.downUntil)
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c, &p.loseRequest)
		go p.pipe(c, s, &p.loseReply)
	}
}

// pipe copies from src to dst until either ends; armed (under mu) makes it
// drop what it read next and close both.
func (p *faultProxy) pipe(dst, src net.Conn, armed *bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			lose := *armed
			*armed = false
			p.mu.Unlock()
			if lose {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drop closes every connection now open.
func (p *faultProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *faultProxy) arm(reply bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if reply {
		p.loseReply = true
	} else {
		p.loseRequest = true
	}
}

// down closes every connection and refuses new ones for d.
func (p *faultProxy) down(d time.Duration) {
	p.mu.Lock()
	p.downUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.drop()
}

// logCheckpoint is stepCheckpoint with an item without ID appended to list
// "log": sent twice, a commit would append it twice.
func logCheckpoint(thread string, step, n int) store.Checkpoint {
	cp := stepCheckpoint(thread, step, n)
	cp.Lists["log"] = []store.Op{{Kind: store.OpAppend, Body: json.RawMessage(fmt.Sprint(step))}}
	return cp
}

// checkLog checks that thread's log holds each of steps 0..last once.
func checkLog(t *testing.T, s *Store, thread string, last int) {
	t.Helper()
	st := checkPrefix(t, s, thread, last, false)
	items := st.Lists["log"]
	if len(items) != last+1 {
		t.Fatalf("%s: %d log items for %d steps: a commit was applied twice, or lost", thread, len(items), last+1)
	}
	for i, it := range items {
		if string(it.Body) != fmt.Sprint(i) {
			t.Fatalf("%s: log item %d is %s", thread, i, it.Body)
		}
	}
}

// warnings collects a store's warnings.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.got = append(w.got, m); w.mu.Unlock() }

func (w *warnings) count(substr string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.got {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// A commit whose connection breaks rides it out: the writer reconnects,
// learns whether the commit landed (its reply lost: it did; its request
// lost: it did not) and sends it again only if it did not, so nothing is
// applied twice or lost; a database unreachable for a second is waited
// out too. It used to fail the run.
func TestCommitRidesOutABrokenConnection(t *testing.T) {
	u := freshSchema(t)
	pu, _ := url.Parse(u)
	p := newFaultProxy(t, pu.Host)
	pu.Host = p.l.Addr().String()
	var w warnings
	s := open(t, pu.String(), WithDefaultDurability(store.Sync), WithWarn(w.add))
	defer s.Close()
	ctx := context.Background()
	const thread = "blip"
	const steps = 12
	for step := 0; step < steps; step++ {
		switch step {
		case 3, 7:
			p.arm(true) // the reply is lost: the commit landed
		case 5:
			p.arm(false) // the request is lost: it did not
		case 9:
			p.down(time.Second) // nothing gets through for a second
		}
		if err := s.Put(ctx, logCheckpoint(thread, step, 100)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	checkLog(t, s, thread, steps-1)
	if w.count("it had landed") == 0 || w.count("committed again") == 0 {
		t.Fatalf("warnings: %q", w.got)
	}
	t.Logf("warnings: %q", w.got)
}

// A database that stays unreachable fails the commit once the reconnect
// window passes (the longest lease the store holds), not at once and not
// never; the error says the commit did not get through.
func TestCommitGivesUpAfterTheWindow(t *testing.T) {
	u := freshSchema(t)
	pu, _ := url.Parse(u)
	p := newFaultProxy(t, pu.Host)
	pu.Host = p.l.Addr().String()
	s := open(t, pu.String(), WithDefaultDurability(store.Sync))
	defer s.Close()
	ctx := context.Background()
	release, err := s.Acquire(ctx, "gone", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := s.Put(ctx, logCheckpoint("gone", 0, 10)); err != nil {
		t.Fatal(err)
	}
	p.down(time.Hour)
	start := time.Now()
	err = s.Put(ctx, logCheckpoint("gone", 1, 10))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no reconnect got the commit through within 2s") {
		t.Fatalf("after %s: %v", took, err)
	}
	if took < time.Second || took > 10*time.Second {
		t.Fatalf("gave up after %s, with a lease of 2s", took)
	}
}

// A lease whose holder ran on this machine and whose process is gone is
// taken over at once (a run that died while the database was down could
// not release it); a live holder's, or one on another machine, is not.
func TestLeaseOfADeadProcessOnThisMachine(t *testing.T) {
	if machineID() == "" {
		t.Skip("no machine id here")
	}
	u := freshSchema(t)
	var w warnings
	s := open(t, u, WithHolder("me"), WithWarn(w.add))
	defer s.Close()
	ctx := context.Background()
	pool := pgxPoolFor(t, u)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	myStart, _ := processStart(os.Getpid())
	for _, c := range []struct {
		name     string
		machine  string
		pid      int
		started  int64
		takeOver bool
	}{
		{"its process is gone", machineID(), dead.Process.Pid, 1, true},
		{"its pid is another process now", machineID(), os.Getpid(), myStart + 1, true},
		{"its process lives", machineID(), os.Getpid(), myStart, false},
		{"another machine", "another-boot/pidns:1", dead.Process.Pid, 1, false},
		{"an older holder that recorded nothing", "", 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			session := "s-" + strings.ReplaceAll(c.name, " ", "-")
			if _, err := pool.Exec(ctx, `INSERT INTO agent_lsp_leases (session, holder, token, expires_at, machine, pid, started)
				VALUES ($1, 'the old holder', 'old-token', now() + interval '1 hour', $2, $3, $4)`, session, c.machine, c.pid, c.started); err != nil {
				t.Fatal(err)
			}
			release, err := s.Acquire(ctx, session, time.Minute, nil)
			if c.takeOver {
				if err != nil {
					t.Fatalf("not taken over: %v", err)
				}
				release()
				if w.count("took over the lease of session "+session+" from the old holder at once") != 1 {
					t.Fatalf("not reported: %q", w.got)
				}
				return
			}
			if !errors.Is(err, store.ErrBusy) {
				if err == nil {
					release()
				}
				t.Fatalf("taken from a holder that may live: %v", err)
			}
		})
	}
}

// A lease is released even when the database is unreachable for a moment
// as the run ends: the release tries again, so the next run of the session
// starts at once instead of waiting for the lease to expire.
func TestLeaseReleaseRetries(t *testing.T) {
	u := freshSchema(t)
	pu, _ := url.Parse(u)
	p := newFaultProxy(t, pu.Host)
	pu.Host = p.l.Addr().String()
	s := open(t, pu.String())
	defer s.Close()
	ctx := context.Background()
	release, err := s.Acquire(ctx, "r", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.down(time.Second)
	release()
	other := open(t, u, WithHolder("next"))
	defer other.Close()
	again, err := other.Acquire(ctx, "r", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
	again()
}

// privateCluster starts a PostgreSQL cluster of the test's own with
// scripts/postgres.sh (a restart would end the connections of other
// packages' tests on the shared one) and returns its URL and directory.
func privateCluster(t *testing.T) (string, string) {
	t.Helper()
	serverURL(t) // skips (or fails in CI) where there is no PostgreSQL to test with
	script := filepath.Join("..", "..", "scripts", "postgres.sh")
	out, err := exec.Command("bash", script).Output()
	if err != nil {
		t.Fatalf("start a cluster: %v", err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			vars[k] = v
		}
	}
	dir := vars[urlEnv+"_DIR"]
	if vars[urlEnv] == "" || dir == "" {
		t.Fatalf("postgres.sh said %q", out)
	}
	t.Cleanup(func() { exec.Command("bash", script, "stop", dir).Run() })
	return vars[urlEnv], dir
}

// A database restart (pg_ctl restart -m fast: every connection is ended)
// in the middle of a run's commits is ridden out: every step is stored
// once, the lease survives, and the next run takes it at once after the
// first releases it.
func TestCommitRidesOutADatabaseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of its own")
	}
	u, dir := privateCluster(t)
	var w warnings
	s := open(t, u, WithDefaultDurability(store.Sync), WithWarn(w.add))
	defer s.Close()
	ctx := context.Background()
	lost := make(chan struct{}, 1)
	release, err := s.Acquire(ctx, "restarted", 15*time.Second, func() { lost <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	const steps = 60
	for step := 0; step < steps; step++ {
		if step == 10 {
			go func() {
				restarted <- exec.Command("bash", filepath.Join("..", "..", "scripts", "postgres.sh"), "restart", dir).Run()
			}()
		}
		if err := s.Put(ctx, logCheckpoint("restarted", step, 100)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart: %v", err)
	}
	checkLog(t, s, "restarted", steps-1)
	select {
	case <-lost:
		t.Fatal("the lease was lost")
	default:
	}
	release()
	next := open(t, u, WithHolder("next"))
	defer next.Close()
	again, err := next.Acquire(ctx, "restarted", 15*time.Second, nil)
	if err != nil {
		t.Fatalf("after the run ended: %v", err)
	}
	again()
	t.Logf("warnings: %q", w.got)
}
