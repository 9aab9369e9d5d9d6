package model

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// streamed answers a chat request with body as its event stream.
func streamed(t *testing.T, body string) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return NewOpenAI(Config{BaseURL: srv.URL, Model: "m", Retries: -1, Timeout: 2 * time.Second})
}

// TestReadStream covers the shapes of event streams servers send.
func TestReadStream(t *testing.T) {
	const stop = `data: {"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	tests := []struct {
		name    string
		stream  string
		want    string // content
		wantErr string // "" for none
	}{
		{"plain", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"choices":[{"delta":{"content":"b"}}]}` + "\n\n" + stop + "data: [DONE]\n\n", "ab", ""},
		{"no space after data:, CRLF, comments and event lines", "data:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n: keep-alive\r\nevent: chunk\r\n" + stop + "data:[DONE]\r\n", "a", ""},
		{"no [DONE]", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n" + stop, "a", ""},
		{"cut before finishing", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n", "", errStreamCut.Error()},
		{"error in the stream", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n", "", "error, overloaded"},
		{"error object at the end", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n" + `{"error":{"message":"gone away"}}` + "\n", "", "error, gone away"},
		{"bad chunk", "data: {\"choices\":[\n\n", "", "unexpected end of JSON input"},
		{"only empty lines", strings.Repeat("\n", 301) + stop, "", openai.ErrTooManyEmptyStreamMessages.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := streamed(t, tt.stream).Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || resp.Content != tt.want {
				t.Fatalf("content %q, err %v; want %q", resp.Content, err, tt.want)
			}
		})
	}
}

// TestStreamErrorIsAPIError checks that an error sent in the stream is an
// *openai.APIError, which overflow detection (TestOverflowInStream) and
// retries read.
func TestStreamErrorIsAPIError(t *testing.T) {
	m := streamed(t, `data: {"error":{"message":"m","code":"rate_limit_exceeded"}}`+"\n\n")
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("err = %#v", err)
	}
}

// TestRefusalKeepsGoOpenAIErrors checks the errors of refused requests: an
// OpenAI error body is an *openai.APIError with the status; any other body a
// *openai.RequestError holding it.
func TestRefusalKeepsGoOpenAIErrors(t *testing.T) {
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body.Load().(string))
	}))
	t.Cleanup(srv.Close)
	m := NewOpenAI(Config{BaseURL: srv.URL, Model: "m", Retries: -1, Timeout: 2 * time.Second})
	chat := func() error {
		_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
		return err
	}
	body.Store(`{"error":{"message":"bad tool schema","type":"invalid_request_error"}}`)
	var apiErr *openai.APIError
	if err := chat(); !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.HTTPStatus != "400 Bad Request" ||
		!strings.Contains(err.Error(), "error, status code: 400, status: 400 Bad Request, message: bad tool schema") {
		t.Fatalf("err = %v", err)
	}
	body.Store(`not json`)
	var reqErr *openai.RequestError
	if err := chat(); !errors.As(err, &reqErr) || reqErr.HTTPStatusCode != 400 || string(reqErr.Body) != "not json" {
		t.Fatalf("err = %v", err)
	}
}

// TestChatHeaders checks what a chat request carries besides its body: the
// path, the key as a bearer token, the content types.
func TestChatHeaders(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	m := NewOpenAI(Config{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: secret})
	if _, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+secret ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "text/event-stream" {
		t.Fatalf("%s %s %v", r.Method, r.URL, r.Header)
	}
}

// countingServer starts a test server with handler and counts the
// connections clients open to it.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

// TestChatReusesConnection checks that consecutive calls go over one
// connection: each stream is read to its end.
func TestChatReusesConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: [DONE]\n\n")
	})
	m := NewOpenAI(Config{BaseURL: srv.URL, Model: "m"})
	for range 5 {
		if _, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 calls, want 1", n)
	}
}

// TestChatDoesNotWaitForTheBodysEnd: a call returns at the stream's
// [DONE], before the server ends the body (the HTTP/1.1 last chunk comes in
// a write of its own); the next call takes the same connection once the end
// came, and a body that never ends costs the next call a new connection
// after the limit, never a hang.
func TestChatDoesNotWaitForTheBodysEnd(t *testing.T) {
	hold := make(chan chan struct{}, 4) // per request: closed to end its body
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select {
		case end := <-hold:
			<-end
		default: // not held: the body ends now
		}
	})
	m := NewOpenAI(Config{BaseURL: srv.URL, Model: "m", Retries: -1})
	chat := func() {
		t.Helper()
		res := make(chan error, 1)
		go func() {
			_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
			res <- err
		}()
		select {
		case err := <-res:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Chat waited for the end of the body")
		}
	}

	first := make(chan struct{})
	hold <- first
	chat() // returns while the handler still holds the body open
	close(first)
	chat() // waits for the first body's end, then reuses its connection
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections after the first body ended, want 1", n)
	}

	m.ends.limit = 200 * time.Millisecond
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	hold <- never
	chat() // its body never ends
	chat() // after the limit, over a new connection
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections after a body that never ended, want 2", n)
	}
}

// A caller that cancels its context once the call returned (a summary
// call's deferred cancel, a run's end) keeps the connection: the end of the
// body is read after that, with the request no longer tied to the context.
func TestChatKeepsConnectionWhenCallerCancels(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(time.Millisecond) // the last chunk comes a moment later
	})
	m := NewOpenAI(Config{BaseURL: srv.URL, Model: "m"})
	for range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := m.Chat(ctx, Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 10 calls cancelled after they returned, want 1", n)
	}
}

// Chunks outside the common shape (testdata/hostile/odd-chunks.txt) end the
// call with an answer or a clear error, never a panic or a hang, and a key
// in another case keeps its meaning (encoding/json matches keys so).
func TestOddChunks(t *testing.T) {
	data, err := os.ReadFile("../../testdata/hostile/odd-chunks.txt")
	if err != nil {
		t.Fatal(err)
	}
	const stop = `data: {"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		m := streamed(t, "data: "+line+"\n\n"+stop)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := m.Chat(ctx, Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
		hung := ctx.Err() != nil
		cancel()
		if hung {
			t.Errorf("%q: the call hung", line)
		}
		if err == nil && strings.HasPrefix(line, `{"Choices"`) && resp.Content != "case" {
			t.Errorf("%q: content %q", line, resp.Content)
		}
	}
}
