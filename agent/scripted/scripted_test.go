package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func user(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
}

var readFileTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:        "read_file",
	Description: "Read a file of the current project, with line numbers.",
	Parameters: map[string]any{"type": "object", "required": []any{"path"}, "properties": map[string]any{
		"path": map[string]any{"type": "string", "description": "path relative to the project root"}}},
}}

// TestCountTokens checks that CountTokens is the cl100k count of the texts a
// request carries plus the documented overheads, within a few tokens, and
// that tools count.
func TestCountTokens(t *testing.T) {
	cases := []struct {
		name  string
		req   openai.ChatCompletionRequest
		texts []string // what a provider tokenizes
		slack int      // tokens CountTokens may add beyond texts and the per-message and per-tool overheads
		exact int      // when not 0, the count OpenAI's API reports for req
	}{
		{name: "empty", req: openai.ChatCompletionRequest{}, exact: TokensReplyPriming},
		{name: "one user message", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("hello world")}},
			texts: []string{"hello world"}, slack: 1, exact: 2 + 1 + TokensPerMessage + TokensReplyPriming},
		{name: "conversation with tool calls", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are a coding agent. Use the tools."},
			user("Fix the failing test in parser_test.go, please."),
			{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"parser_test.go"}`}}}},
			{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Name: "read_file", Content: "1 package parser\n2 \n3 func TestParse(t *testing.T) {}\n"},
		}}, texts: []string{"You are a coding agent. Use the tools.", "Fix the failing test in parser_test.go, please.",
			"read_file", `{"path":"parser_test.go"}`, "call_1", "read_file", "1 package parser\n2 \n3 func TestParse(t *testing.T) {}\n"},
			slack: 4 + 1},
		{name: "tools count", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{readFileTool}},
			texts: []string{"hi", `{"name":"read_file","description":"Read a file of the current project, with line numbers.",` +
				`"parameters":{"properties":{"path":{"description":"path relative to the project root","type":"string"}},"required":["path"],"type":"object"}}`},
			slack: 1},
		{name: "deprecated functions count like tools", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("hi")},
			//lint:ignore SA1019 the double still counts what older clients send
			Functions: []openai.FunctionDefinition{*readFileTool.Function}},
			texts: []string{"hi", `{"name":"read_file","description":"Read a file of the current project, with line numbers.",` +
				`"parameters":{"properties":{"path":{"description":"path relative to the project root","type":"string"}},"required":["path"],"type":"object"}}`},
			slack: 1},
		{name: "multi-part content", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser,
			MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "What is in this picture?"},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA"}}}}}},
			texts: []string{"What is in this picture?"}, slack: 1 + TokensPerImage},
		{name: "non-ASCII", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("你好，世界！ Grüße 👋")}},
			texts: []string{"你好，世界！ Grüße 👋"}, slack: 1},
		// The example of OpenAI's cookbook "How to count tokens with
		// tiktoken", for which the API reports 129 prompt tokens (gpt-4-0613).
		{name: "OpenAI cookbook example", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
			{Role: "system", Name: "example_user", Content: "New synergies will help drive top-line growth."},
			{Role: "system", Name: "example_assistant", Content: "Things working well together will increase revenue."},
			{Role: "system", Name: "example_user", Content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
			{Role: "system", Name: "example_assistant", Content: "Let's talk later when we're less busy about how to do better."},
			{Role: "user", Content: "This late pivot means we don't have time to boil the ocean for the client deliverable."},
		}}, texts: []string{"You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
			"New synergies will help drive top-line growth.", "example_user",
			"Things working well together will increase revenue.", "example_assistant",
			"Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.", "example_user",
			"Let's talk later when we're less busy about how to do better.", "example_assistant",
			"This late pivot means we don't have time to boil the ocean for the client deliverable."},
			slack: 6 + 4, exact: 129},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CountTokens(c.req)
			if c.exact != 0 && got != c.exact {
				t.Errorf("CountTokens = %d, want %d", got, c.exact)
			}
			sum := 0
			for _, s := range c.texts {
				n, err := cl100k().Count(s)
				if err != nil {
					t.Fatal(err)
				}
				sum += n
			}
			//lint:ignore SA1019 the double still counts what older clients send
			floor := sum + TokensPerMessage*len(c.req.Messages) + TokensReplyPriming + TokensPerTool*(len(c.req.Tools)+len(c.req.Functions))
			if got < floor || got > floor+c.slack {
				t.Errorf("CountTokens = %d, want %d..%d (texts %d tokens)", got, floor, floor+c.slack, sum)
			}
		})
	}
}

// TestCountTokensToolDescription: a tool adds at least its description.
func TestCountTokensToolDescription(t *testing.T) {
	without := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("hi")}}
	with := without
	with.Tools = []openai.Tool{readFileTool}
	if d := CountTokens(with) - CountTokens(without); d < TokensPerTool+Tokens(readFileTool.Function.Description) {
		t.Errorf("the tool added %d tokens", d)
	}
}

// TestCountTokensConcurrent loads the tokenizer from many goroutines at once
// (run with -race).
func TestCountTokensConcurrent(t *testing.T) {
	req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user(strings.Repeat("concurrent tokens ", 50))}, Tools: []openai.Tool{readFileTool}}
	want := CountTokens(req)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if got := CountTokens(req); got != want {
				t.Errorf("CountTokens = %d, want %d", got, want)
			}
		})
	}
	wg.Wait()
}

func start(t *testing.T, s Script) *Server {
	t.Helper()
	srv, err := Start("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// post sends req as JSON over real HTTP and returns the status, content type
// and body of the answer.
func post(t *testing.T, srv *Server, req openai.ChatCompletionRequest) (int, string, string) {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// streamed is what a go-openai client receives from a streamed completion.
type streamed struct {
	text   string
	chunks []openai.ChatCompletionStreamResponse
}

func streamChat(t *testing.T, srv *Server, req openai.ChatCompletionRequest) (streamed, error) {
	t.Helper()
	cfg := openai.DefaultConfig("test")
	cfg.BaseURL = srv.URL
	st, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		return streamed{}, err
	}
	defer st.Close()
	var out streamed
	var text strings.Builder
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		out.chunks = append(out.chunks, c)
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	out.text = text.String()
	return out, nil
}

func bigRequest(words int) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "scripted", Messages: []openai.ChatCompletionMessage{user("summarize " + strings.Repeat("lorem ipsum ", words))}}
}

// TestContextLimit checks that a request over the script's contextTokens gets
// OpenAI's 400 context_length_exceeded answer with the limit and the counted
// tokens, is recorded, and consumes no turn.
func TestContextLimit(t *testing.T) {
	cases := []struct {
		name     string
		sizes    []int // words of each request, in order
		refused  []bool
		wantText []string // text of each accepted request, in order
	}{
		{name: "oversized then fitting gets turn 1", sizes: []int{500, 5, 5}, refused: []bool{true, false, false}, wantText: []string{"turn one", "turn two"}},
		{name: "fitting, oversized, fitting", sizes: []int{5, 500, 5}, refused: []bool{false, true, false}, wantText: []string{"turn one", "turn two"}},
		{name: "repeated overflows", sizes: []int{500, 800, 5}, refused: []bool{true, true, false}, wantText: []string{"turn one"}},
	}
	const limit = 100
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, Script{ContextTokens: limit, Turns: []Turn{{Text: "turn one"}, {Text: "turn two"}}})
			var texts []string
			refused := 0 // each refused request is sent twice: over net/http, then with go-openai
			for i, words := range c.sizes {
				req := bigRequest(words)
				tokens := CountTokens(req)
				if (tokens > limit) != c.refused[i] {
					t.Fatalf("request %d has %d tokens against a limit of %d; fix the case", i, tokens, limit)
				}
				if !c.refused[i] {
					req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
					got, err := streamChat(t, srv, req)
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					texts = append(texts, got.text)
					continue
				}
				refused++
				status, ctype, body := post(t, srv, req)
				want := strings.NewReplacer("{limit}", "100", "{tokens}", strconv.Itoa(tokens)).Replace(DefaultOverflowBody)
				if status != http.StatusBadRequest || ctype != "application/json" || body != want {
					t.Errorf("request %d: got %d %s %s\nwant 400 application/json %s", i, status, ctype, body, want)
				}
				// A go-openai client reads it as OpenAI's error.
				_, err := streamChat(t, srv, req)
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
					!strings.Contains(apiErr.Message, "maximum context length is 100 tokens") {
					t.Errorf("request %d: go-openai got %#v", i, err)
				}
			}
			if strings.Join(texts, "|") != strings.Join(c.wantText, "|") {
				t.Errorf("accepted requests got %q, want %q", texts, c.wantText)
			}
			reqs, counts := srv.Requests(), srv.Counts()
			if len(reqs) != len(c.sizes)+refused || len(counts) != len(reqs) {
				t.Errorf("recorded %d requests and %d counts, want %d", len(reqs), len(counts), len(c.sizes)+refused)
			}
			for i := range counts {
				if counts[i] != CountTokens(reqs[i]) {
					t.Errorf("Counts()[%d] = %d, CountTokens(Requests()[%d]) = %d", i, counts[i], i, CountTokens(reqs[i]))
				}
			}
			if srv.Overflows() != 2*refused {
				t.Errorf("Overflows() = %d, want %d", srv.Overflows(), 2*refused)
			}
			srv.SetScript(Script{Turns: []Turn{{Text: "again"}}})
			if got, err := streamChat(t, srv, bigRequest(800)); err != nil || got.text != "again" || srv.Overflows() != 0 || len(srv.Counts()) != 1 {
				t.Errorf("after SetScript without a limit: %q, %v, %d overflows, %d counts", got.text, err, srv.Overflows(), len(srv.Counts()))
			}
		})
	}
}

// TestProviderOverflows serves every real provider wording of
// testdata/model/context-overflow.json and checks what a client receives over
// HTTP: the case's status, and its body with {limit} and {tokens} replaced.
func TestProviderOverflows(t *testing.T) {
	b, err := os.ReadFile("../../testdata/model/context-overflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name     string `json:"name"`
			Status   int    `json:"status"`
			Overflow bool   `json:"overflow"`
			Body     string `json:"body"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	srv := start(t, Script{})
	served := 0
	for _, c := range file.Cases {
		if !c.Overflow {
			continue
		}
		served++
		t.Run(c.Name, func(t *testing.T) {
			const limit = 64
			srv.SetScript(Script{ContextTokens: limit, Overflow: &Overflow{Status: c.Status, Body: c.Body}, Turns: []Turn{{Text: "fits"}}})
			req := bigRequest(300)
			tokens := CountTokens(req)
			status, ctype, body := post(t, srv, req)
			want := strings.NewReplacer("{limit}", strconv.Itoa(limit), "{tokens}", strconv.Itoa(tokens)).Replace(c.Body)
			if status != c.Status || ctype != "application/json" || body != want {
				t.Errorf("got %d %s %s\nwant %d application/json %s", status, ctype, body, c.Status, want)
			}
			if !json.Valid([]byte(body)) {
				t.Errorf("body is not JSON after substitution: %s", body)
			}
			if strings.Contains(c.Body, "{tokens}") && !strings.Contains(body, strconv.Itoa(tokens)) {
				t.Errorf("body lacks the token count %d: %s", tokens, body)
			}
			if got, err := streamChat(t, srv, bigRequest(3)); err != nil || got.text != "fits" {
				t.Errorf("the next request that fits got %q, %v; want the unconsumed turn", got.text, err)
			}
			if srv.Overflows() != 1 {
				t.Errorf("Overflows() = %d, want 1", srv.Overflows())
			}
		})
	}
	if served < 10 {
		t.Errorf("only %d overflow cases in the file", served)
	}
}

// TestUsage checks the last chunk: counted usage when the request asks for
// stream_options.include_usage (a Turn's Usage overriding it), none otherwise.
func TestUsage(t *testing.T) {
	args := `{"path":"main.go"}`
	cases := []struct {
		name           string
		turn           Turn
		includeUsage   *bool // nil: no stream_options
		wantUsage      bool
		wantCompletion int // when wantUsage; -1: the counted one
		wantPrompt     int // when wantUsage; -1: the counted one
	}{
		{name: "text, include_usage", turn: Turn{Text: "Hello, streaming world! 你好", Chunk: 5}, includeUsage: ptr(true),
			wantUsage: true, wantCompletion: Tokens("Hello, streaming world! 你好"), wantPrompt: -1},
		{name: "tool calls, include_usage", turn: Turn{Text: "Reading.", ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(args)}}},
			includeUsage: ptr(true), wantUsage: true, wantCompletion: Tokens("Reading.") + Tokens("read_file") + Tokens(args), wantPrompt: -1},
		{name: "raw arguments, include_usage", turn: Turn{ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", ArgsRaw: ptr(`{"path": "unterminated`)}}},
			includeUsage: ptr(true), wantUsage: true, wantCompletion: Tokens("read_file") + Tokens(`{"path": "unterminated`), wantPrompt: -1},
		{name: "scripted usage overrides", turn: Turn{Text: "hi", Usage: &Usage{Prompt: 12, Completion: 7}}, includeUsage: ptr(true),
			wantUsage: true, wantCompletion: 7, wantPrompt: 12},
		{name: "no stream_options", turn: Turn{Text: "Hello"}},
		{name: "include_usage false", turn: Turn{Text: "Hello"}, includeUsage: ptr(false)},
		{name: "no stream_options, scripted usage", turn: Turn{Text: "Hello", Usage: &Usage{Prompt: 12, Completion: 7}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, Script{Turns: []Turn{c.turn}})
			req := openai.ChatCompletionRequest{Model: "scripted", Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: "You are terse."}, user("Say hello and read main.go.")},
				Tools: []openai.Tool{readFileTool}}
			if c.includeUsage != nil {
				req.StreamOptions = &openai.StreamOptions{IncludeUsage: *c.includeUsage}
			}
			got, err := streamChat(t, srv, req)
			if err != nil {
				t.Fatal(err)
			}
			if got.text != c.turn.Text {
				t.Errorf("text %q, want %q", got.text, c.turn.Text)
			}
			for i, ch := range got.chunks[:len(got.chunks)-1] {
				if ch.Usage != nil {
					t.Errorf("chunk %d of %d carries usage %+v; only the last may", i, len(got.chunks), ch.Usage)
				}
			}
			last := got.chunks[len(got.chunks)-1]
			if !c.wantUsage {
				if last.Usage != nil || len(last.Choices) == 0 || last.Choices[0].FinishReason == "" {
					t.Errorf("last chunk %+v; want the finish chunk and no usage", last)
				}
				return
			}
			if last.Usage == nil || len(last.Choices) != 0 {
				t.Fatalf("last chunk %+v; want usage and no choices", last)
			}
			prompt, completion := c.wantPrompt, c.wantCompletion
			if prompt == -1 {
				prompt = CountTokens(req)
				if recorded := srv.Counts()[0]; recorded != prompt {
					t.Errorf("the server counted %d, the client's request has %d", recorded, prompt)
				}
			}
			want := openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
			if *last.Usage != want {
				t.Errorf("usage %+v, want %+v", *last.Usage, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The server reads a request body as go-openai's types take it: what they
// refuse (a type they do not take where the server reads, trailing data) is
// a bad request, and what they take is read.
func TestRequestBodies(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, true},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":null}`, true},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, true},
		{`{"model":5,"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, false},
		{`{"messages":[{"role":"user","content":"hi"}]} trailing`, false},
		{`{"messages":[{"role":"user","content":"hi"}]} {}`, false},
		{`{"messages":[{"role":"user","content":"hi","tool_calls":[{"type":5}]}]}`, false},
		{`{"messages":[{"role":"user","content":5}]}`, false},
		{`{"messages":{"role":"user"}}`, false},
		{`[]`, false},
	}
	for _, tt := range tests {
		var want openai.ChatCompletionRequest
		if wantOK := json.Unmarshal([]byte(tt.body), &want) == nil; wantOK != tt.ok {
			t.Fatalf("%s: encoding/json into go-openai's request ok=%v; the table says %v", tt.body, wantOK, tt.ok)
		}
		rd := reader{tok: Tokens}
		if _, err := rd.read([]byte(tt.body)); (err == nil) != tt.ok {
			t.Errorf("%s: read error %v, want ok=%v", tt.body, err, tt.ok)
		}
	}
}

// A message with both a text and parts counts both, as before.
func TestCountTokensTextAndParts(t *testing.T) {
	req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hello there",
		MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "more"}}}}}
	if got, want := CountTokens(req), TokensReplyPriming+TokensPerMessage+Tokens("user")+Tokens("hello there")+Tokens("more"); got != want {
		t.Fatalf("CountTokens = %d, want %d", got, want)
	}
}

// ExchangeFloor replays the last run's requests, each answered by its turn
// again, until about 200 exchanges were made; a body the server refuses, or
// a run it did not record, is an error.
func TestExchangeFloor(t *testing.T) {
	turns := []Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}
	srv, err := Start("127.0.0.1:0", Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	exchange := func(bodies [][]byte) (time.Duration, error) {
		return Exchange(context.Background(), srv.URL, bodies)
	}
	if _, err := srv.ExchangeFloor(turns, exchange); err == nil {
		t.Fatal("a floor of a run not recorded: no error")
	}
	for i := range turns {
		if code, _, body := post(t, srv, openai.ChatCompletionRequest{Model: "scripted", Messages: []openai.ChatCompletionMessage{user(fmt.Sprint("turn ", i))}}); code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, code, body)
		}
	}
	var replayed [][]byte
	floor, err := srv.ExchangeFloor(turns, func(bodies [][]byte) (time.Duration, error) {
		replayed = bodies
		return exchange(bodies)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(replayed) != 201 || string(replayed[3]) != string(replayed[0]) || !strings.Contains(string(replayed[2]), "turn 2") {
		t.Errorf("replayed %d bodies, want the run's 3 again and again up to 201", len(replayed))
	}
	if got := len(srv.Bodies()); got != 201 {
		t.Errorf("the server answered %d exchanges, want 201", got)
	}
	if floor <= 0 {
		t.Errorf("floor = %v", floor)
	}
	_, err = Exchange(context.Background(), srv.URL, [][]byte{[]byte(`{"model":1}`)})
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a refused body: %v, want the 400 named", err)
	}
}

// TestRecordTo checks that each chat request reaches the recording writer as
// one line of JSON, in arrival order, with what the client sent.
func TestRecordTo(t *testing.T) {
	srv := start(t, Script{Turns: []Turn{{Text: "one"}, {Text: "two"}}})
	var rec bytes.Buffer
	srv.RecordTo(&rec)
	for _, prompt := range []string{"first\nprompt", "second"} {
		if status, _, body := post(t, srv, openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user(prompt)}}); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	lines := strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("recorded %d lines, want 2: %q", len(lines), rec.String())
	}
	for i, want := range []string{"first\nprompt", "second"} {
		var req openai.ChatCompletionRequest
		if err := json.Unmarshal([]byte(lines[i]), &req); err != nil || len(req.Messages) != 1 || req.Messages[0].Content != want {
			t.Errorf("line %d = %s (%v), want the request with %q", i, lines[i], err, want)
		}
	}
}
