package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

const (
	fixtureLimit  = 8192
	fixtureTokens = 9100
)

type overflowCase struct {
	Name     string `json:"name"`
	Status   int    `json:"status"`
	Overflow bool   `json:"overflow"`
	Learns   bool   `json:"learns"`
	Body     string `json:"body"`
}

func loadOverflowCases(t *testing.T) []overflowCase {
	t.Helper()
	data, err := os.ReadFile("../../testdata/model/context-overflow.json")
	if err != nil {
		t.Fatalf("reading the fixture: %v", err)
	}
	var fx struct {
		Cases []overflowCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatalf("parsing the fixture: %v", err)
	}
	if len(fx.Cases) == 0 {
		t.Fatal("the fixture has no cases")
	}
	r := strings.NewReplacer("{limit}", fmt.Sprint(fixtureLimit), "{tokens}", fmt.Sprint(fixtureTokens))
	for i := range fx.Cases {
		fx.Cases[i].Body = r.Replace(fx.Cases[i].Body)
	}
	return fx.Cases
}

// refusing serves status and body to every chat request and counts them.
func refusing(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestContextOverflowFixture(t *testing.T) {
	for _, tc := range loadOverflowCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			srv, requests := refusing(t, tc.Status, tc.Body)
			m := NewOpenAI(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: secret,
				Retries: 3, Backoff: time.Millisecond, Timeout: 2 * time.Second})
			_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
			if err == nil {
				t.Fatal("Chat succeeded against a refusing server")
			}
			var ov *OverflowError
			isOverflow := errors.As(err, &ov)
			if isOverflow != tc.Overflow {
				t.Fatalf("overflow = %v, want %v (err: %v)", isOverflow, tc.Overflow, err)
			}
			var merr *Error
			if !errors.As(err, &merr) || merr.Status != tc.Status {
				t.Fatalf("err = %v, want a *Error with status %d", err, tc.Status)
			}
			if !tc.Overflow {
				want := int32(1)
				if tc.Status == 429 || tc.Status >= 500 {
					want = 4 // retried as before
				}
				if n := requests.Load(); n != want {
					t.Fatalf("%d requests, want %d", n, want)
				}
				return
			}
			if n := requests.Load(); n != 1 || merr.Attempts != 1 {
				t.Fatalf("%d requests, %d attempts: an overflow must not be retried", n, merr.Attempts)
			}
			if tc.Learns && ov.Limit != fixtureLimit {
				t.Errorf("Limit = %d, want %d", ov.Limit, fixtureLimit)
			}
			if !tc.Learns && ov.Limit != 0 {
				t.Errorf("Limit = %d from a body that does not say it", ov.Limit)
			}
			if ov.Requested != 0 && ov.Requested != fixtureTokens {
				t.Errorf("Requested = %d, want %d or unknown", ov.Requested, fixtureTokens)
			}
			if ov.Message == "" || strings.Contains(err.Error(), secret) {
				t.Errorf("message %q, error %q", ov.Message, err)
			}
			if tc.Learns && !strings.Contains(ov.Error(), fmt.Sprint(fixtureLimit)) {
				t.Errorf("Error() = %q does not name the limit", ov.Error())
			}
		})
	}
}

// TestOverflowRequestedFromText pins the request sizes the fixture's texts give.
func TestOverflowRequestedFromText(t *testing.T) {
	want := map[string]int{
		"openai": fixtureTokens, "openai-with-tools": fixtureTokens, "vllm": fixtureTokens,
		"vllm-input-tokens": fixtureTokens, "deepseek": fixtureTokens, "llama.cpp": fixtureTokens,
		"llama.cpp-2025": fixtureTokens, "anthropic": fixtureTokens, "mistral": fixtureTokens,
		"gemini": fixtureTokens, "openrouter": fixtureTokens, "tgi": fixtureTokens,
	}
	for _, tc := range loadOverflowCases(t) {
		ov, ok := classifyOverflow(tc.Status, tc.Body, "")
		if !ok {
			continue
		}
		if ov.Requested != want[tc.Name] {
			t.Errorf("%s: Requested = %d, want %d", tc.Name, ov.Requested, want[tc.Name])
		}
	}
}

func TestClassifyOverflow(t *testing.T) {
	long := strings.Repeat("é", 2*maxOverflowMessage)
	tests := []struct {
		name      string
		status    int
		body      string
		key       string
		overflow  bool
		limit     int
		requested int
		message   string // the exact message, when not empty
	}{
		{"key is redacted", 400,
			`{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens. Key sk-test-SECRET-never-shown.","code":"context_length_exceeded"}}`,
			secret, true, 4096, 5000,
			"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens. Key [redacted]."},
		{"plain text body", 400, "prompt is too long: 300 tokens > 200 maximum", "", true, 200, 300, ""},
		{"long message is cut", 400, `{"error":{"message":"` + long + `","code":"context_length_exceeded"}}`, "", true, 0, 0, ""},
		{"n_ctx as the only size", 500, `{"error":{"code":500,"message":"no room","type":"exceed_context_size_error","n_ctx":2048}}`, "", true, 2048, 0, ""},
		{"429 never is", 429, `{"error":{"message":"maximum context length is 4096 tokens","code":"context_length_exceeded"}}`, "", false, 0, 0, ""},
		{"empty body", 400, "", "", false, 0, 0, ""},
		{"unrelated", 400, `{"error":{"message":"Invalid 'messages': empty array.","code":"empty_array"}}`, "", false, 0, 0, ""},
		{"not json", 502, "<html>Bad Gateway</html>", "", false, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ov, ok := classifyOverflow(tt.status, tt.body, tt.key)
			if ok != tt.overflow {
				t.Fatalf("overflow = %v, want %v", ok, tt.overflow)
			}
			if !ok {
				return
			}
			if ov.Limit != tt.limit || ov.Requested != tt.requested {
				t.Errorf("sizes %d/%d, want %d/%d", ov.Requested, ov.Limit, tt.requested, tt.limit)
			}
			if tt.message != "" && ov.Message != tt.message {
				t.Errorf("message %q, want %q", ov.Message, tt.message)
			}
			if tt.key != "" && strings.Contains(ov.Error(), tt.key) {
				t.Errorf("Error() shows the key: %q", ov.Error())
			}
			if len(ov.Message) > maxOverflowMessage+len("…") || !strings.HasPrefix(tt.body, "{") && ov.Message != tt.body {
				t.Errorf("message %q", ov.Message)
			}
		})
	}
}

func TestOverflowErrorText(t *testing.T) {
	tests := []struct {
		ov   OverflowError
		want string
	}{
		{OverflowError{Limit: 8192, Requested: 9000, Message: "too big"}, "the request is larger than the model's context (9000 tokens > 8192): too big"},
		{OverflowError{Limit: 8192, Message: "too big"}, "the request is larger than the model's context (8192 tokens): too big"},
		{OverflowError{Message: "too big"}, "the request is larger than the model's context: too big"},
	}
	for _, tt := range tests {
		if got := tt.ov.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestOverflowInStream covers a server that starts the event stream and then
// reports the overflow inside it, where only go-openai's parse of it is left.
func TestOverflowInStream(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_ctx":4096}}` + "\n\n"))
	}))
	t.Cleanup(srv.Close)
	m := NewOpenAI(Config{BaseURL: srv.URL, Model: "m", Retries: 3, Backoff: time.Millisecond, Timeout: 2 * time.Second})
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
	var ov *OverflowError
	if !errors.As(err, &ov) || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests, want an overflow after one", err, n.Load())
	}
}

// TestLargeErrorBodyPassesThrough checks that capturing an error body leaves
// all of it, past the captured part, for go-openai to parse.
func TestLargeErrorBodyPassesThrough(t *testing.T) {
	msg := strings.Repeat("x", 2*maxErrorBody) + " the end"
	body := `{"error":{"message":"` + msg + `","type":"invalid_request_error"}}`
	srv, _ := refusing(t, 400, body)
	m := NewOpenAI(Config{BaseURL: srv.URL + "/v1", Model: "m", Retries: 3, Backoff: time.Millisecond, Timeout: 2 * time.Second})
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
	var ov *OverflowError
	if err == nil {
		t.Fatal("Chat succeeded against a refusing server")
	}
	if text := err.Error(); errors.As(err, &ov) || !strings.HasSuffix(text, "the end") {
		t.Fatalf("err ends %q", text[max(0, len(text)-40):])
	}
}

// TestTextErrorBodyKeepsStatus checks that a body go-openai cannot parse as an
// APIError ({"error":"text"}) keeps its status, and so its retries.
func TestTextErrorBodyKeepsStatus(t *testing.T) {
	srv, requests := refusing(t, 503, `{"error":"model is loading"}`)
	m := NewOpenAI(Config{BaseURL: srv.URL + "/v1", Model: "m", Retries: 2, Backoff: time.Millisecond, Timeout: 2 * time.Second})
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
	var merr *Error
	if !errors.As(err, &merr) || merr.Status != 503 || requests.Load() != 3 {
		t.Fatalf("err = %v after %d requests, want status 503 after 3", err, requests.Load())
	}
}
