//go:build unix

package tools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fetchPerms answers fetch questions as a user would: the hosts in allow
// (once), "always" for those in always; every question is recorded.
type fetchPerms struct {
	mu     sync.Mutex
	asked  []FetchRequest
	allow  map[string]bool
	always map[string]bool
}

func (p *fetchPerms) AllowCommand(context.Context, CommandRequest) (Permission, error) {
	return Permission{Reason: "no"}, nil
}

func (p *fetchPerms) AllowFetch(_ context.Context, req FetchRequest) (Permission, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req)
	if p.always[req.Host] || (!req.Redirect && p.allow[req.Host]) {
		return Permission{Allowed: true}, nil
	}
	return Permission{Reason: "the user denied it"}, nil
}

func fetchEnv(cfg FetchConfig, perms Permissions) *Env {
	return &Env{Session: "s-1", Project: "p", Permissions: perms, Fetch: cfg, MaxOutput: 1 << 20}
}

func fetch(env *Env, url string) Result {
	return All().Call(context.Background(), env, callOf("fetch_url", fmt.Sprintf(`{"url":%q}`, url)))
}

// loopback starts a test server on 127.0.0.1 that counts its requests.
func loopback(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

const page = `<!doctype html><html><head><title>T</title><style>body{}</style><script>alert(1)</script></head>
<body><h1>Release notes</h1><p>Version <b>2.0</b> adds <a href="/docs">docs</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`

// A page of a loopback server the list names is reduced to Markdown,
// labelled as untrusted and citing its URL.
func TestFetchReducesHTMLToText(t *testing.T) {
	srv, _ := loopback(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Cookie") != "" || r.Header.Get("Authorization") != "" {
			t.Errorf("credentials sent: %v", r.Header)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	res := fetch(fetchEnv(FetchConfig{Allow: []string{"127.0.0.1"}}, nil), srv.URL+"/notes#top")
	if res.IsError {
		t.Fatal(res.Content)
	}
	for _, want := range []string{"fetched " + srv.URL + "/notes (200 OK, text/html", "# Release notes", "Version **2.0** adds [docs](" + srv.URL + "/docs).",
		"- one\n- two", "untrusted content from the web", "-----BEGIN UNTRUSTED CONTENT ", "-----END UNTRUSTED CONTENT "} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("missing %q in:\n%s", want, res.Content)
		}
	}
	if strings.Contains(res.Content, "alert(1)") || strings.Contains(res.Content, "body{}") {
		t.Errorf("scripts or styles kept:\n%s", res.Content)
	}
}

// A redirect to a host the list does not name (localhost, another name of
// the same loopback) is refused: its server is never reached.
func TestFetchRedirectToAHostNotAllowed(t *testing.T) {
	other, reached := loopback(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	port := other.Listener.Addr().(*net.TCPAddr).Port
	srv, _ := loopback(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/admin", port), http.StatusFound)
	})
	perms := &fetchPerms{}
	res := fetch(fetchEnv(FetchConfig{Allow: []string{"127.0.0.1"}}, perms), srv.URL)
	if !res.IsError || !strings.Contains(res.Content, "redirected to http://localhost:") || !strings.Contains(res.Content, "not followed") {
		t.Errorf("got %s", res.Content)
	}
	if reached.Load() != 0 {
		t.Errorf("the host that was not allowed was reached %d times", reached.Load())
	}
	if len(perms.asked) != 1 || !perms.asked[0].Redirect || perms.asked[0].Host != "localhost" {
		t.Errorf("questions: %+v (a redirect asks only whether the host is allowed already)", perms.asked)
	}
}

// A redirect loop stops after a few redirects.
func TestFetchRedirectLoop(t *testing.T) {
	srv, n := loopback(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path+"x", http.StatusFound) })
	res := fetch(fetchEnv(FetchConfig{Allow: []string{"127.0.0.1"}}, nil), srv.URL+"/a")
	if !res.IsError || !strings.Contains(res.Content, "stopped after 5 redirects") || n.Load() != 6 {
		t.Errorf("%d requests: %s", n.Load(), res.Content)
	}
}

// A 50 MB answer is cut at the bound, and says so.
func TestFetchCutsALargeAnswer(t *testing.T) {
	srv, _ := loopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("y", 1023) + "\n"
		for range 50 << 10 {
			if _, err := fmt.Fprint(w, line); err != nil {
				return // the client stopped reading
			}
		}
	})
	res := fetch(fetchEnv(FetchConfig{Allow: []string{"127.0.0.1"}, MaxBytes: 1 << 20}, nil), srv.URL)
	if res.IsError || !strings.Contains(res.Content, "cut: only the first 1048576 bytes were read") {
		t.Errorf("got %s", Clip(res.Content, 400))
	}
}

// Without an allow list entry, the host is asked about with the full URL;
// a denial is the tool's error.
func TestFetchAsksPerHost(t *testing.T) {
	srv, n := loopback(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	perms := &fetchPerms{}
	res := fetch(fetchEnv(FetchConfig{}, perms), "https://docs.example.org/guide?q=1")
	if !res.IsError || !strings.Contains(res.Content, "the user denied it") || len(perms.asked) != 1 ||
		perms.asked[0].URL != "https://docs.example.org/guide?q=1" || perms.asked[0].Host != "docs.example.org" || perms.asked[0].Session != "s-1" {
		t.Errorf("%s; asked %+v", res.Content, perms.asked)
	}
	// Plain HTTP to a loopback host goes only to one the list names: "*"
	// is not enough, nor is the user's answer.
	for _, cfg := range []FetchConfig{{Allow: []string{"*"}}, {}} {
		perms := &fetchPerms{allow: map[string]bool{"127.0.0.1": true}}
		res := fetch(fetchEnv(cfg, perms), srv.URL)
		if !res.IsError || !strings.Contains(res.Content, "plain HTTP only to a loopback host that permissions.fetch (--allow-fetch) names") {
			t.Errorf("%v: %s", cfg.Allow, res.Content)
		}
	}
	if n.Load() != 0 {
		t.Errorf("reached %d times", n.Load())
	}
	for _, bad := range []string{"ftp://example.org/x", "https://user:pw@example.org/", "file:///etc/passwd", "https:///nohost"} {
		if res := fetch(fetchEnv(FetchConfig{Allow: []string{"*"}}, nil), bad); !res.IsError {
			t.Errorf("%s was fetched: %s", bad, res.Content)
		}
	}
}

// tlsFetch is a FetchConfig whose network is hooks: Resolve answers from
// answers (one list per lookup, the last repeated), Dial records the
// address it was asked for and connects to the test's TLS server on
// loopback, whatever the address: nothing leaves the machine.
type tlsFetch struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers [][]netip.Addr
	lookups int
	dialed  []string
}

func newTLSFetch(t *testing.T, answers ...[]netip.Addr) *tlsFetch {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello from "+r.Host)
	}))
	t.Cleanup(srv.Close)
	return &tlsFetch{srv: srv, answers: answers}
}

func (f *tlsFetch) config(allow ...string) FetchConfig {
	return FetchConfig{Allow: allow, TLS: f.srv.Client().Transport.(*http.Transport).TLSClientConfig,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			a := f.answers[min(f.lookups, len(f.answers)-1)]
			f.lookups++
			return a, nil
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.mu.Lock()
			f.dialed = append(f.dialed, addr)
			f.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, f.srv.Listener.Addr().String())
		}}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// DNS rebinding: the name resolves to a public address when checked and to
// loopback afterwards; the connection goes to the address checked.
func TestFetchConnectsToTheCheckedAddress(t *testing.T) {
	f := newTLSFetch(t, addrs("93.184.216.34"), addrs("127.0.0.1"))
	res := fetch(fetchEnv(f.config("example.com"), nil), "https://example.com/")
	if res.IsError || !strings.Contains(res.Content, "hello from example.com") {
		t.Fatal(res.Content)
	}
	if len(f.dialed) != 1 || f.dialed[0] != "93.184.216.34:443" || f.lookups != 1 {
		t.Errorf("dialed %v after %d lookups", f.dialed, f.lookups)
	}
}

// A name with any private, loopback or link-local address is refused before
// a connection, unless the list names the host exactly ("*" does not).
func TestFetchRefusesPrivateAddresses(t *testing.T) {
	for _, tt := range []struct {
		addrs []netip.Addr
		allow string
		want  string // "" when fetched
	}{
		{addrs("93.184.216.34", "127.0.0.1"), "*", "resolves to 127.0.0.1, a loopback address"},
		{addrs("10.1.2.3"), "*", "resolves to 10.1.2.3, a private address"},
		{addrs("169.254.169.254"), "*", "a link-local address"},
		{addrs("::ffff:192.168.1.1"), "*", "resolves to 192.168.1.1, a private address"},
		{addrs("100.64.0.1"), "*", "carrier-grade NAT"},
		{addrs("fd00::1"), "*", "private"},
		{addrs("10.1.2.3"), "example.com", ""}, // named exactly: an intranet host
	} {
		f := newTLSFetch(t, tt.addrs)
		res := fetch(fetchEnv(f.config(tt.allow), nil), "https://example.com/")
		switch {
		case tt.want == "" && (res.IsError || len(f.dialed) != 1):
			t.Errorf("%v allowed as %s: %s (dialed %v)", tt.addrs, tt.allow, res.Content, f.dialed)
		case tt.want != "" && (!res.IsError || !strings.Contains(res.Content, tt.want) || len(f.dialed) != 0):
			t.Errorf("%v allowed as %s: %s (dialed %v), want %q", tt.addrs, tt.allow, res.Content, f.dialed, tt.want)
		}
	}
	// An IP literal is checked as itself.
	f := newTLSFetch(t, addrs("93.184.216.34"))
	if res := fetch(fetchEnv(f.config("*"), nil), "https://[::1]:8443/"); !res.IsError || !strings.Contains(res.Content, "::1, a loopback address") || len(f.dialed) != 0 {
		t.Errorf("[::1]: %s", res.Content)
	}
}

// Binary answers are refused, text of other types is read as it is.
func TestFetchTypes(t *testing.T) {
	srv, _ := loopback(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/img" {
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": 1}`)
	})
	env := fetchEnv(FetchConfig{Allow: []string{"127.0.0.1"}}, nil)
	if res := fetch(env, srv.URL+"/img"); !res.IsError || !strings.Contains(res.Content, "the answer is image/png, not text") {
		t.Errorf("an image: %s", res.Content)
	}
	if res := fetch(env, srv.URL+"/j"); res.IsError || !strings.Contains(res.Content, `{"a": 1}`) {
		t.Errorf("JSON: %s", res.Content)
	}
}
