package model

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

const secret = "sk-test-SECRET-never-shown"

func serve(t *testing.T, turns ...scripted.Turn) (*scripted.Server, *OpenAI) {
	t.Helper()
	srv, err := scripted.Start("127.0.0.1:0", scripted.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, NewOpenAI(Config{BaseURL: srv.URL, Model: "scripted", APIKey: secret, Backoff: 10 * time.Millisecond, Timeout: 2 * time.Second})
}

func ask(m Model) (Response, []string, error) {
	var deltas []string
	resp, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")},
		Tools: []ToolSpec{{Name: "read_file", Description: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		func(s string) { deltas = append(deltas, s) })
	return resp, deltas, err
}

func TestStreamingText(t *testing.T) {
	srv, m := serve(t, scripted.Turn{Text: "Hello, streaming world! 你好", Chunk: 5, Usage: &scripted.Usage{Prompt: 12, Completion: 7}})
	resp, deltas, err := ask(m)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello, streaming world! 你好" || len(deltas) < 5 || strings.Join(deltas, "") != resp.Content {
		t.Fatalf("content %q from %d deltas", resp.Content, len(deltas))
	}
	if resp.Usage != (Usage{PromptTokens: 12, CompletionTokens: 7, TotalTokens: 19}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || len(reqs[0].Tools) != 1 || reqs[0].Messages[0].Content != "hi" {
		t.Fatalf("request seen by server: %+v", reqs)
	}
}

func TestToolCallDeltas(t *testing.T) {
	for _, noIndex := range []bool{false, true} {
		_, m := serve(t, scripted.Turn{NoIndex: noIndex, ToolCalls: []scripted.ToolCall{
			{ID: "a", Name: "read_file", Args: json.RawMessage(`{"path":"some/long/path/to/a/file.go"}`)},
			{ID: "b", Name: "search", Args: json.RawMessage(`{"pattern":"func .*Handler"}`)},
		}})
		resp, _, err := ask(m)
		if err != nil {
			t.Fatal(err)
		}
		want := []message.ToolCall{{ID: "a", Name: "read_file", Args: `{"path":"some/long/path/to/a/file.go"}`}, {ID: "b", Name: "search", Args: `{"pattern":"func .*Handler"}`}}
		if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != want[0] || resp.ToolCalls[1] != want[1] {
			t.Fatalf("noIndex=%v: %+v", noIndex, resp.ToolCalls)
		}
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		turns    []scripted.Turn
		wantErr  string
		requests int
		minWait  time.Duration
	}{
		{"500 then success", []scripted.Turn{{Error: &scripted.HTTPError{Status: 500}}, {Text: "ok"}}, "", 2, 0},
		{"429 honours Retry-After", []scripted.Turn{{Error: &scripted.HTTPError{Status: 429, RetryAfter: "1"}}, {Text: "ok"}}, "", 2, time.Second},
		{"stream cut mid-way", []scripted.Turn{{Text: "partial answer that is cut", Chunk: 3, Cut: true}, {Text: "ok"}}, "", 2, 0},
		{"request timeout", []scripted.Turn{{Delay: scripted.Duration(3 * time.Second), Text: "late"}, {Text: "ok"}}, "", 2, 0},
		{"400 is not retried", []scripted.Turn{{Error: &scripted.HTTPError{Status: 400, Message: "bad tool schema"}}, {Text: "never"}}, "bad tool schema", 1, 0},
		{"gives up after retries", []scripted.Turn{{Error: &scripted.HTTPError{Status: 503}}, {Error: &scripted.HTTPError{Status: 503}}, {Error: &scripted.HTTPError{Status: 503}}, {Error: &scripted.HTTPError{Status: 503}}, {Error: &scripted.HTTPError{Status: 503}}}, "after 5 attempt", 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, m := serve(t, tt.turns...)
			start := time.Now()
			resp, _, err := ask(m)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatal("error shows the API key")
				}
			} else if err != nil || resp.Content != "ok" {
				t.Fatalf("resp %q err %v", resp.Content, err)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Fatalf("%d requests, want %d", n, tt.requests)
			}
			if time.Since(start) < tt.minWait {
				t.Fatalf("retried after %s, before Retry-After", time.Since(start))
			}
		})
	}
}

func TestCancelStopsRetries(t *testing.T) {
	_, m := serve(t, scripted.Turn{Delay: scripted.Duration(10 * time.Second), Text: "x"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.Chat(ctx, Request{Messages: []message.Message{message.NewHuman("hi")}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// connWrites records the writes made to the connections it dials.
type connWrites struct {
	mu     sync.Mutex // guards writes
	writes []string
}

type recordedConn struct {
	net.Conn
	w *connWrites
}

func (c recordedConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.writes = append(c.w.writes, string(p))
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// A chat request reaches the provider in one write, headers and body
// together: two would cost a packet more and wake the provider twice.
func TestRequestInOneWrite(t *testing.T) {
	_, m := serve(t, scripted.Turn{Text: "ok"}, scripted.Turn{Text: "ok again"})
	var w connWrites
	tr := chatTransport().Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		return recordedConn{c, &w}, err
	}
	m.transport = tr
	history := []message.Message{message.NewHuman(strings.Repeat("a long history ", 2000))} // 30 KB
	for _, text := range []string{"ok", "ok again"} {
		resp, err := m.Chat(context.Background(), Request{Messages: history}, nil)
		if err != nil || resp.Content != text {
			t.Fatalf("chat: %+v %v", resp, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.writes) != 2 {
		t.Fatalf("two requests took %d writes, want one each", len(w.writes))
	}
	for _, wr := range w.writes {
		if !strings.HasPrefix(wr, "POST ") || !strings.HasSuffix(wr, `"include_usage":true}}`) {
			t.Errorf("a write is not a whole request: %.40q…%q", wr, wr[max(0, len(wr)-40):])
		}
	}
}

// TestRefusedBeforeSending checks that what go-openai refuses to send is
// refused without a request: a model that only completes text, and tools
// given to a GPT-6 reasoning model.
func TestRefusedBeforeSending(t *testing.T) {
	tools := []ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{}`)}}
	tests := []struct {
		model string
		tools []ToolSpec
		want  error
	}{
		{"text-davinci-003", nil, openai.ErrChatCompletionInvalidModel}, // a completions-only model
		{openai.GPT6Sol, tools, openai.ErrReasoningToolsRequireResponses},
		{openai.GPT6Sol, nil, nil},
		{"gpt-4o", tools, nil},
	}
	for _, tt := range tests {
		srv, m := serve(t, scripted.Turn{Text: "ok"})
		_, err := m.Chat(context.Background(), Request{Model: tt.model, Messages: []message.Message{message.NewHuman("hi")}, Tools: tt.tools}, nil)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (len(srv.Requests()) == 1) {
			t.Errorf("%s with %d tools: err %v after %d requests, want %v", tt.model, len(tt.tools), err, len(srv.Requests()), tt.want)
		}
	}
}

// A tool whose parameters are not JSON fails the call before anything is
// sent, and is not retried.
func TestRequestBadToolParameters(t *testing.T) {
	srv, m := serve(t, scripted.Turn{Text: "ok"})
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")},
		Tools: []ToolSpec{{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}}, nil)
	var merr *Error
	if !errors.As(err, &merr) || merr.Attempts != 1 || len(srv.Requests()) != 0 {
		t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
	}
}
