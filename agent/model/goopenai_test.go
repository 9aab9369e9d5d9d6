package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The tests in this file show, on go-openai v1.43.0 alone, the three things
// its chat stream does not do that this package adds around it (stream.go).
// Each fails, and its wrapper can go, once the library does it.

func plainClient(url string) *openai.Client {
	oc := openai.DefaultConfig("k")
	oc.BaseURL = url
	return openai.NewClientWithConfig(oc)
}

var chatReq = openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}

// A refused stream request's error carries neither the response's headers
// (a 429's Retry-After) nor the body's fields APIError does not declare
// (llama.cpp's n_ctx, which sizes the context after an overflow), and the
// stream is nil, so its headers cannot be read either: upstream
// sashabaranov/go-openai#867 (PR #1120 open). notingTransport records both.
func TestGoOpenAIStreamErrorDropsHeadersAndFields(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`)
	})
	stream, err := plainClient(srv.URL).CreateChatCompletionStream(context.Background(), chatReq)
	var apiErr *openai.APIError
	if stream != nil || !errors.As(err, &apiErr) {
		t.Fatalf("stream %v, err %v", stream, err)
	}
	if text := fmt.Sprintf("%+v %v", *apiErr, err); strings.Contains(text, "8192") || strings.Contains(text, "Retry") {
		t.Fatalf("go-openai now keeps what it dropped (%s): notingTransport may go", text)
	}
}

// Closing a stream after its [DONE] closes a body whose end (HTTP/1.1's last
// chunk) has not come yet, which drops the connection: every call then dials
// anew. streamEnds reads the end on the side instead
// (TestChatDoesNotWaitForTheBodysEnd). No upstream issue found.
func TestGoOpenAIStreamCloseDropsConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond) // the body's end comes in a write of its own
	})
	c := plainClient(srv.URL)
	for range 3 {
		stream, err := c.CreateChatCompletionStream(context.Background(), chatReq)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
		stream.Close()
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections for 3 calls: go-openai now keeps the connection, streamEnds may go", n)
	}
}

// A stream cut before the model finished (no finish reason, no [DONE]) ends
// with io.EOF, as a finished one does: read tells them apart by the finish
// reason.
func TestGoOpenAICutStreamIsEOF(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"half an ans"}}]}`+"\n\n")
	})
	stream, err := plainClient(srv.URL).CreateChatCompletionStream(context.Background(), chatReq)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	stream.Recv()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("a cut stream ends with %v: read's finish-reason check may change", err)
	}
}
