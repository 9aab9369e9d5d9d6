package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// closedURL is the base URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	return url
}

// checkModelIDs checks that the list came without error and holds the test
// double's models want, in order.
func checkModelIDs(t *testing.T, models []ModelInfo, err error, want []string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mi := range models {
		ids = append(ids, mi.ID)
		if mi.OwnedBy != "agent-lsp test double" {
			t.Errorf("owned by %q", mi.OwnedBy)
		}
	}
	if models == nil || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("models %v, want %v", ids, want)
	}
}

func TestModels(t *testing.T) {
	cases := []struct {
		name    string
		script  scripted.Script
		baseURL func(t *testing.T) string // overrides the scripted server's
		key     string
		want    []string // IDs, when the list is expected
		wantIs  error    // else the error errors.Is
		wantMsg []string // substrings of the error ({url}: the models URL)
	}{
		{name: "default list", key: secret, want: []string{"scripted"}},
		{name: "sorted", script: scripted.Script{Models: []string{"qwen2.5-coder:7b", "gpt-4o-mini", "llama3.1:8b"}}, key: secret,
			want: []string{"gpt-4o-mini", "llama3.1:8b", "qwen2.5-coder:7b"}},
		{name: "empty list", script: scripted.Script{Models: []string{}}, key: secret, want: []string{}},
		{name: "404 text", script: scripted.Script{ModelsStatus: 404}, key: secret, wantIs: ErrNoModelList,
			wantMsg: []string{"GET {url}: 404 Not Found: the endpoint has no model list"}},
		{name: "405", script: scripted.Script{ModelsStatus: 405}, key: secret, wantIs: ErrNoModelList,
			wantMsg: []string{"GET {url}: 405 Method Not Allowed: the endpoint has no model list"}},
		{name: "501", script: scripted.Script{ModelsStatus: 501}, key: secret, wantIs: ErrNoModelList, wantMsg: []string{"501 Not Implemented"}},
		{name: "401 refused", script: scripted.Script{ModelsStatus: 401}, key: secret, wantIs: ErrKeyRefused,
			wantMsg: []string{"GET {url}: 401 Unauthorized: the endpoint refused the API key"}},
		{name: "401 without a key", script: scripted.Script{ModelsStatus: 401}, wantIs: ErrKeyRefused, wantMsg: []string{"none was sent"}},
		{name: "503", script: scripted.Script{ModelsStatus: 503}, key: secret, wantMsg: []string{"GET {url}: 503 Service Unavailable"}},
		{name: "unreachable", baseURL: closedURL, key: secret, wantIs: ErrUnreachable,
			wantMsg: []string{"GET {url}: the endpoint is unreachable: dial tcp", "connection refused"}},
		{name: "unknown host", baseURL: func(*testing.T) string { return "http://no-such-host.invalid/v1" }, key: secret, wantIs: ErrUnreachable,
			wantMsg: []string{"GET {url}: the endpoint is unreachable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := scripted.Start("127.0.0.1:0", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			base := srv.URL + "/" // a trailing slash is dropped
			if tc.baseURL != nil {
				base = tc.baseURL(t)
			}
			m := NewOpenAI(Config{BaseURL: base, Model: "scripted", APIKey: tc.key, Timeout: 5 * time.Second})
			url := strings.TrimRight(base, "/") + "/models"
			if got := m.BaseURL() + "/models"; got != url {
				t.Fatalf("BaseURL: %s", got)
			}
			models, err := m.Models(context.Background())
			if tc.want != nil {
				checkModelIDs(t, models, err, tc.want)
				return
			}
			if err == nil {
				t.Fatalf("no error; models %v", models)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			for _, w := range tc.wantMsg {
				if w = strings.ReplaceAll(w, "{url}", url); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var se *StatusError
			if code := tc.script.ModelsStatus; tc.baseURL == nil && (!errors.As(err, &se) || se.Code != code) {
				t.Errorf("error %v carries no StatusError %d", err, code)
			} else if tc.baseURL != nil && errors.As(err, &se) {
				t.Errorf("error %v carries a StatusError", err)
			}
			for _, other := range []error{ErrNoModelList, ErrKeyRefused, ErrUnreachable} {
				if other != tc.wantIs && errors.Is(err, other) {
					t.Errorf("error %v is also %v", err, other)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the key leaked: %v", err)
			}
		})
	}
}

// TestModelsNeverEchoTheKey: a server that quotes the key whole, in JSON or
// in text, gets it redacted.
func TestModelsNeverEchoTheKey(t *testing.T) {
	for _, body := range []string{
		`{"error":{"message":"key ` + secret + ` is over quota","type":"insufficient_quota"}}`,
		"bad key " + secret,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusPaymentRequired)
			fmt.Fprint(w, body)
		}))
		m := NewOpenAI(Config{BaseURL: srv.URL + "/v1", APIKey: secret})
		_, err := m.Models(context.Background())
		srv.Close()
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "402 Payment Required") ||
			!strings.Contains(err.Error(), "[redacted]") {
			t.Fatalf("error %v", err)
		}
	}
}

// TestModelsHonoursContext: a server that never answers is given up at the
// context's deadline, and says so.
func TestModelsHonoursContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	m := NewOpenAI(Config{BaseURL: srv.URL + "/v1", APIKey: secret})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Models(ctx)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), srv.URL+"/v1/models") {
		t.Fatalf("error %v", err)
	}
}

// TestModelsNotAList: a 200 that is not a model list (a web page) is an
// error naming the URL.
func TestModelsNotAList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>welcome</html>")
	}))
	defer srv.Close()
	_, err := NewOpenAI(Config{BaseURL: srv.URL}).Models(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET "+srv.URL+"/models: the answer is not a model list") {
		t.Fatalf("error %v", err)
	}
}

func TestBaseURLDefault(t *testing.T) {
	if got := NewOpenAI(Config{}).BaseURL(); got != "https://api.openai.com/v1" {
		t.Fatal(got)
	}
}

func TestOffers(t *testing.T) {
	ollama := []ModelInfo{{ID: "llama3.1:latest", OwnedBy: "library"}, {ID: "qwen2.5-coder:7b", OwnedBy: "library"}}
	openAI := []ModelInfo{{ID: "gpt-4o", OwnedBy: "system"}, {ID: "gpt-4o-mini", OwnedBy: "system"}}
	llamaCpp := []ModelInfo{{ID: "/models/qwen2.5-coder-7b-q4_k_m.gguf", OwnedBy: "llamacpp"}}
	for _, tc := range []struct {
		models []ModelInfo
		name   string
		want   bool
	}{
		{openAI, "gpt-4o", true},
		{openAI, "gpt-4", false},
		{openAI, "GPT-4o", false},
		{ollama, "llama3.1", true},
		{ollama, "llama3.1:latest", true},
		{ollama, "llama3.1:8b", false},
		{ollama, "qwen2.5-coder", false},
		{ollama, "qwen2.5-coder:7b", true},
		{llamaCpp, "anything", true},
		{nil, "gpt-4o", false},
	} {
		if got := Offers(tc.models, tc.name); got != tc.want {
			t.Errorf("Offers(%v, %q) = %v", tc.models, tc.name, got)
		}
	}
}
