//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileWeb is testdata/hostile/hostile-web.json.
type hostileWeb struct {
	Cases []struct {
		Name      string
		Allow     []string
		DNS       map[string][][]string
		URL       string
		TimeoutMs int
		Pages     map[string]hostilePage
		Error     bool
		Want      []string
		NotWant   []string
		Dialed    []string
	}
}

// hostilePage is what the test's server answers for one path: headers and
// a status, then body (or the bytes of bodyFile), repeat written times
// times, and tail; hold keeps the answer open until the client leaves;
// headerBytes adds that many bytes of headers.
type hostilePage struct {
	Status      int
	Headers     map[string]string
	Body        string
	BodyFile    string
	Repeat      string
	Times       int
	Tail        string
	Hold        bool
	HeaderBytes int
}

func (p hostilePage) serve(t *testing.T, w http.ResponseWriter, r *http.Request) {
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	for i := 0; i < p.HeaderBytes/1024; i++ {
		w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 1000))
	}
	if p.Status != 0 {
		w.WriteHeader(p.Status)
	}
	body := []byte(p.Body)
	if p.BodyFile != "" {
		b, err := os.ReadFile(filepath.Join("../../testdata/hostile", p.BodyFile))
		if err != nil {
			t.Error(err)
			return
		}
		body = b
	}
	if _, err := w.Write(body); err != nil {
		return
	}
	chunk := []byte(strings.Repeat(p.Repeat, 1024))
	for i := 0; i+1024 <= p.Times; i += 1024 {
		if _, err := w.Write(chunk); err != nil {
			return // the client stopped reading
		}
	}
	w.Write([]byte(strings.Repeat(p.Repeat, p.Times%1024) + p.Tail))
	if p.Hold {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// Each hostile page of testdata/hostile/hostile-web.json is refused or
// bounded as the fixture says; every connection goes to an address that
// was checked, and nothing beyond the test's own servers is reached.
func TestHostileWeb(t *testing.T) {
	b, err := os.ReadFile("../../testdata/hostile/hostile-web.json")
	if err != nil {
		t.Fatal(err)
	}
	var web hostileWeb
	if err := json.Unmarshal(b, &web); err != nil {
		t.Fatal(err)
	}
	plain, reached := loopback(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "local secret") })
	for _, c := range web.Cases {
		t.Run(c.Name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p, ok := c.Pages[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				if loc := p.Headers["Location"]; loc != "" {
					p.Headers = map[string]string{"Location": strings.ReplaceAll(loc, "{loopback}", plain.URL)}
				}
				p.serve(t, w, r)
			}))
			defer srv.Close()
			var mu sync.Mutex // guards lookups and dialed
			lookups := map[string]int{}
			var dialed []string
			cfg := FetchConfig{Allow: c.Allow, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig,
				Timeout: time.Duration(c.TimeoutMs) * time.Millisecond,
				Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
					mu.Lock()
					defer mu.Unlock()
					answers, ok := c.DNS[host]
					if !ok {
						return nil, fmt.Errorf("no such host %s", host)
					}
					answer := answers[min(lookups[host], len(answers)-1)]
					lookups[host]++
					return addrs(answer...), nil
				},
				Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
					mu.Lock()
					dialed = append(dialed, addr)
					mu.Unlock()
					var d net.Dialer
					return d.DialContext(ctx, network, srv.Listener.Addr().String())
				}}
			res := fetch(fetchEnv(cfg, nil), c.URL)
			if res.IsError != c.Error {
				t.Errorf("error %v, want %v: %s", res.IsError, c.Error, Clip(res.Content, 600))
			}
			for _, w := range c.Want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("missing %q in %s", w, Clip(res.Content, 600))
				}
			}
			for _, w := range c.NotWant {
				if strings.Contains(res.Content, w) {
					t.Errorf("%q kept in %s", w, Clip(res.Content, 600))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(dialed, " ") != strings.Join(c.Dialed, " ") {
				t.Errorf("dialed %v, want %v", dialed, c.Dialed)
			}
		})
	}
	if reached.Load() != 0 {
		t.Errorf("the loopback server was reached %d times", reached.Load())
	}
}
