// Package scripted is a test double of an OpenAI-compatible chat server. It is
// not a model: it replays scripted turns over real HTTP (/v1/chat/completions
// with SSE streaming and tool-call deltas) and lists models (/v1/models, or
// refuses to, as servers without a list do) so tests and the demo can drive
// the agent end to end without a real LLM.
//
// Where context size matters it behaves like a real provider: it counts every
// request's prompt tokens with a real tokenizer (CountTokens), refuses a
// request larger than the script's ContextTokens with a provider's wording
// (Overflow), and reports counted usage in the last chunk when the request
// asks for stream_options.include_usage.
package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Script is a list of conversations. A request belongs to the first
// conversation whose Match occurs in the request's first user message ("" matches
// any); each request consumes that conversation's next turn.
//
// With ContextTokens set, a request whose CountTokens exceeds it is refused as
// a provider refuses it (Overflow, by default OpenAI's 400
// context_length_exceeded answer) and consumes no turn: the same turn answers
// the next request that fits.
type Script struct {
	Turns         []Turn         `json:"turns,omitempty"`     // shorthand for one conversation matching anything
	ByHistory     bool           `json:"byHistory,omitempty"` // ByHistory of the shorthand conversation
	Conversations []Conversation `json:"conversations,omitempty"`
	ContextTokens int            `json:"contextTokens,omitempty"` // the model's context size; 0 = unlimited
	Overflow      *Overflow      `json:"overflow,omitempty"`      // the answer to a request over ContextTokens; nil = OpenAI's
	// Models are the model IDs GET /v1/models lists, in this order; nil
	// lists "scripted".
	Models []string `json:"models,omitempty"`
	// RefuseResponseFormat answers a chat request that carries a
	// response_format with OpenAI's 400 for a model without structured
	// output (param "response_format"), recording it and consuming no turn,
	// as an endpoint without the feature does.
	RefuseResponseFormat bool `json:"refuseResponseFormat,omitempty"`
	// ModelsStatus, when neither 0 nor 200, is the status GET /v1/models
	// answers instead of the list, with the body real servers send: 404, 405
	// and 501 as a Go or Gin router without the route (text: "404 page not
	// found", "405 method not allowed"), 401 as OpenAI (JSON quoting the
	// key masked, e.g. "sk-ab*****wxyz"), any other as OpenAI's JSON error.
	ModelsStatus int `json:"modelsStatus,omitempty"`
	// InputModalities, by model ID, are listed as OpenRouter lists them
	// (architecture.input_modalities, e.g. ["text", "image"]): how an
	// endpoint's list says which models take images.
	InputModalities map[string][]string `json:"inputModalities,omitempty"`
}

// Conversation is a sequence of turns for requests whose first user message
// contains Match.
type Conversation struct {
	Match string `json:"match"`
	Turns []Turn `json:"turns"`
	// ByHistory picks the turn from the request instead of by arrival order:
	// the turn after the one whose tool calls the request's last assistant
	// message carries (matched by tool-call ID), or the first turn when it holds
	// none. A repeated request gets the same answer, as from a deterministic
	// model: crash tests use it, since a run resumed after losing steps asks
	// again. Tool calls without an ID get "call_h<turn>_<index>".
	ByHistory bool `json:"byHistory,omitempty"`
}

// Turn is one scripted answer.
type Turn struct {
	Text      string     `json:"text,omitempty"`      // streamed in chunks
	Chunk     int        `json:"chunk,omitempty"`     // bytes per text chunk; default 8
	ToolCalls []ToolCall `json:"toolCalls,omitempty"` // streamed as deltas
	NoIndex   bool       `json:"noIndex,omitempty"`   // omit tool-call delta indexes, like some servers
	Error     *HTTPError `json:"error,omitempty"`     // answer with an HTTP error instead
	Delay     Duration   `json:"delay,omitempty"`     // wait before answering
	ChunkWait Duration   `json:"chunkWait,omitempty"` // wait between chunks
	Cut       bool       `json:"cut,omitempty"`       // drop the connection after half the stream
	HoldEnd   Duration   `json:"holdEnd,omitempty"`   // after [DONE], hold the body open this long before ending it
	Usage     *Usage     `json:"usage,omitempty"`
}

// ToolCall is a scripted tool call. Args is any JSON value; ArgsRaw, when set,
// is sent verbatim (for malformed arguments). Repeat and Grow write runaway
// output compactly: the call is sent Repeat times (IDs suffixed "_<n>"), and
// each string argument named in Grow is padded with "x" to that many bytes.
type ToolCall struct {
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	ArgsRaw *string         `json:"argsRaw,omitempty"`
	Repeat  int             `json:"repeat,omitempty"`
	Grow    map[string]int  `json:"grow,omitempty"`
}

// expand returns calls with Repeat and Grow applied.
func expand(calls []ToolCall) []ToolCall {
	var out []ToolCall
	for _, tc := range calls {
		if len(tc.Grow) > 0 {
			var args map[string]any
			json.Unmarshal(tc.Args, &args)
			if args == nil {
				args = map[string]any{}
			}
			for k, n := range tc.Grow {
				v, _ := args[k].(string)
				args[k] = v + strings.Repeat("x", max(0, n-len(v)))
			}
			tc.Args, _ = json.Marshal(args)
			tc.Grow = nil
		}
		if tc.Repeat <= 1 {
			tc.Repeat = 0
			out = append(out, tc)
			continue
		}
		n := tc.Repeat
		tc.Repeat = 0
		for i := 0; i < n; i++ {
			c := tc
			if c.ID != "" {
				c.ID = fmt.Sprintf("%s_%d", tc.ID, i)
			}
			out = append(out, c)
		}
	}
	return out
}

// HTTPError is a scripted HTTP failure.
type HTTPError struct {
	Status     int    `json:"status"`
	Message    string `json:"message,omitempty"`
	RetryAfter string `json:"retryAfter,omitempty"`
}

// Usage is scripted token usage; it overrides the counted usage the server
// sends in the last chunk when the request asks for stream_options.include_usage.
type Usage struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// Duration is a time.Duration written as "200ms" in JSON.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"200ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Load reads a script file.
func Load(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("load script: %w", err)
	}
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// Server serves a script over HTTP and records every request.
type Server struct {
	URL string // base URL to give a client, ending in /v1

	mu         sync.Mutex
	convs      []Conversation
	cursor     []int
	limit      int
	overflow   *Overflow
	requests   [][]byte // the bodies of the chat requests, in arrival order
	counts     []int
	overflows  int
	models     []string
	modelsSt   int
	noFormat   bool                // RefuseResponseFormat
	modalities map[string][]string // the script's InputModalities
	srv        *http.Server
	ln         net.Listener
	served     atomic.Int64 // nanoseconds spent answering chat requests
	memo       memo         // token counts of the texts requests carried
	reader     reader       // reads requests, counting with memo
	record     io.Writer    // also gets each chat request's body, one JSON line each (RecordTo)
}

// RecordTo makes the server write each chat request's body to w as it
// arrives, compacted to one line of JSON: a test of another process (an
// editor's end-to-end test) reads what the model was sent.
func (s *Server) RecordTo(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = w
}

// Served returns the time the server spent answering chat requests: what a
// benchmark subtracts from its own time to see its client's.
func (s *Server) Served() time.Duration { return time.Duration(s.served.Load()) }

// Start serves script on addr ("127.0.0.1:0" picks a free port).
func Start(addr string, script Script) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String() + "/v1"}
	s.reader.tok = s.memo.tokens
	s.SetScript(script)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln)
	return s, nil
}

// SetScript replaces the script (its context limit and overflow answer too),
// rewinds every conversation and forgets the requests recorded so far.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = script.ContextTokens
	s.models = append([]string(nil), script.Models...)
	if script.Models == nil {
		s.models = []string{"scripted"}
	}
	s.modelsSt = script.ModelsStatus
	s.modalities = script.InputModalities
	s.noFormat = script.RefuseResponseFormat
	s.overflow = nil
	if script.Overflow != nil {
		o := *script.Overflow
		s.overflow = &o
	}
	s.convs = append([]Conversation(nil), script.Conversations...)
	if len(script.Turns) > 0 {
		s.convs = append(s.convs, Conversation{Turns: script.Turns, ByHistory: script.ByHistory})
	}
	for i, c := range s.convs {
		turns := make([]Turn, len(c.Turns))
		for t, turn := range c.Turns {
			turn.ToolCalls = expand(turn.ToolCalls)
			for k := range turn.ToolCalls {
				if c.ByHistory && turn.ToolCalls[k].ID == "" {
					turn.ToolCalls[k].ID = fmt.Sprintf("call_h%d_%d", t, k)
				}
			}
			turns[t] = turn
		}
		s.convs[i].Turns = turns
	}
	s.cursor = make([]int, len(s.convs))
	s.requests = nil
	s.counts = nil
	s.overflows = 0
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	bodies := s.requests[:len(s.requests):len(s.requests)]
	s.mu.Unlock()
	reqs := make([]openai.ChatCompletionRequest, len(bodies))
	for i, b := range bodies {
		// What handle accepted as a request; a field of a type go-openai
		// does not take (handle checks only those it reads, and model and
		// stream) is left out.
		json.Unmarshal(b, &reqs[i])
	}
	return reqs
}

// Bodies returns the bodies of the chat requests received so far, in
// arrival order, as they came; the caller must not modify them.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[:len(s.requests):len(s.requests)]
}

// requestCount returns how many requests were recorded.
func (s *Server) requestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Counts returns each recorded request's CountTokens, in the order of
// Requests.
func (s *Server) Counts() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.counts...)
}

// Overflows returns how many requests were refused for exceeding the
// script's ContextTokens.
func (s *Server) Overflows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflows
}

// refusal is the answer to a request over the context limit.
type refusal struct {
	status int
	body   string
}

// formatRefusal is OpenAI's answer to a response_format a model does not take.
const formatRefusal = `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}`

// next records req (its body and prompt tokens) and returns its turn, or the
// overflow answer without consuming a turn when req exceeds the context limit.
func (s *Server) next(body []byte, req request) (Turn, *refusal, error) {
	tokens := req.Tokens
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, body)
	s.counts = append(s.counts, tokens)
	if s.record != nil {
		var line bytes.Buffer
		if json.Compact(&line, body) == nil {
			line.WriteByte('\n')
			s.record.Write(line.Bytes())
		}
	}
	if s.noFormat && req.ResponseFormat {
		return Turn{}, &refusal{http.StatusBadRequest, formatRefusal}, nil
	}
	if s.limit > 0 && tokens > s.limit {
		s.overflows++
		status, body := s.overflow.render(s.limit, tokens)
		return Turn{}, &refusal{status, body}, nil
	}
	turn, err := s.pick(req)
	return turn, nil, err
}

// pick returns req's turn and advances its conversation. s.mu is held.
func (s *Server) pick(req request) (Turn, error) {
	first := req.firstUser()
	for i, c := range s.convs {
		if !strings.Contains(first, c.Match) {
			continue
		}
		if c.ByHistory {
			n := nextByHistory(c.Turns, req)
			if n < 0 || n >= len(c.Turns) {
				return Turn{}, fmt.Errorf("scripted model: conversation %q has no turn after the request's last tool calls", c.Match)
			}
			return c.Turns[n], nil
		}
		if s.cursor[i] >= len(c.Turns) {
			return Turn{}, fmt.Errorf("scripted model: conversation %q has no turn %d", c.Match, s.cursor[i]+1)
		}
		s.cursor[i]++
		return c.Turns[s.cursor[i]-1], nil
	}
	return Turn{}, fmt.Errorf("scripted model: no conversation matches first user message %q", first)
}

// nextByHistory returns the index of the turn after the one whose tool calls
// the request's last assistant message carries; 0 when it has none; -1 when
// those calls are not in the script.
func nextByHistory(turns []Turn, req request) int {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != openai.ChatMessageRoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for t, turn := range turns {
			for _, tc := range turn.ToolCalls {
				if tc.ID == m.ToolCalls[0].ID {
					return t + 1
				}
			}
		}
		return -1
	}
	return 0
}

// handleModels answers GET /v1/models: the script's Models, or its
// ModelsStatus with the body a real server sends.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	models, status, modalities := s.models, s.modelsSt, s.modalities
	s.mu.Unlock()
	switch status {
	case 0, http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		// What Go's and Gin's routers answer for a route they do not have.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		text := strings.ToLower(http.StatusText(status))
		if status == http.StatusNotFound {
			text = "page not found"
		}
		fmt.Fprintf(w, "%d %s", status, text)
		return
	case http.StatusUnauthorized:
		// OpenAI's wording, which quotes the key masked.
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			writeOpenAIError(w, status, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.", nil)
			return
		}
		masked := key
		if len(key) > 8 {
			masked = key[:5] + strings.Repeat("*", len(key)-9) + key[len(key)-4:]
		}
		writeOpenAIError(w, status, "Incorrect API key provided: "+masked+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key")
		return
	default:
		writeOpenAIError(w, status, http.StatusText(status), nil)
		return
	}
	type architecture struct {
		InputModalities []string `json:"input_modalities"`
	}
	type entry struct {
		ID           string        `json:"id"`
		Object       string        `json:"object"`
		Created      int64         `json:"created"`
		OwnedBy      string        `json:"owned_by"`
		Architecture *architecture `json:"architecture,omitempty"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, id := range models {
		e := entry{ID: id, Object: "model", Created: 1700000000, OwnedBy: "agent-lsp test double"}
		if in, ok := modalities[id]; ok {
			e.Architecture = &architecture{InputModalities: in}
		}
		list.Data = append(list.Data, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// writeOpenAIError writes an error as OpenAI's API does.
func writeOpenAIError(w http.ResponseWriter, status int, msg string, code any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "scripted", "code": status}})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() { s.served.Add(int64(time.Since(start))) }()
	var req request
	body := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
	_, err := body.ReadFrom(r.Body)
	if err == nil {
		req, err = s.reader.read(body.Bytes())
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "scripted model: bad request body: "+err.Error())
		return
	}
	turn, refused, err := s.next(body.Bytes(), req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if refused != nil {
		writeOverflow(w, refused.status, refused.body)
		return
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(time.Duration(turn.Delay)):
		case <-r.Context().Done():
			return
		}
	}
	if turn.Error != nil {
		if turn.Error.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.Error.RetryAfter)
		}
		msg := turn.Error.Message
		if msg == "" {
			msg = http.StatusText(turn.Error.Status)
		}
		writeError(w, turn.Error.Status, msg)
		return
	}
	var usage *Usage
	if req.IncludeUsage {
		usage = &Usage{Prompt: req.Tokens, Completion: completionTokens(turn, s.memo.tokens)}
		if turn.Usage != nil {
			usage = turn.Usage
		}
	}
	s.stream(w, r, turn, usage)
}

// chunks are the stream's events for turn: the role, the text and each tool
// call's arguments in pieces as real servers send them, the finish reason,
// then usage when not nil.
func (s *Server) chunks(turn Turn, usage *Usage) []openai.ChatCompletionStreamResponse {
	var events []openai.ChatCompletionStreamResponse
	chunk := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
		events = append(events, openai.ChatCompletionStreamResponse{ID: "scripted", Object: "chat.completion.chunk", Model: "scripted",
			Choices: []openai.ChatCompletionStreamChoice{{Delta: d, FinishReason: finish}}})
	}
	chunk(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, "")
	size := turn.Chunk
	if size <= 0 {
		size = 8
	}
	for text := []rune(turn.Text); len(text) > 0; {
		n := min(size, len(text))
		chunk(openai.ChatCompletionStreamChoiceDelta{Content: string(text[:n])}, "")
		text = text[n:]
	}
	for i, tc := range turn.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", s.requestCount(), i)
		}
		args := toolArgs(tc)
		idx := i
		var index *int
		if !turn.NoIndex {
			index = &idx
		}
		chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: index, ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tc.Name}}}}, "")
		piece := max(7, len(args)/256) // pieces, as real servers send them; big arguments in fewer
		for a := []rune(args); len(a) > 0; {
			n := min(piece, len(a))
			chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: index, Function: openai.FunctionCall{Arguments: string(a[:n])}}}}, "")
			a = a[n:]
		}
	}
	finish := openai.FinishReasonStop
	if len(turn.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	chunk(openai.ChatCompletionStreamChoiceDelta{}, finish)
	if usage != nil {
		events = append(events, openai.ChatCompletionStreamResponse{ID: "scripted", Object: "chat.completion.chunk", Model: "scripted",
			Choices: []openai.ChatCompletionStreamChoice{}, Usage: &openai.Usage{PromptTokens: usage.Prompt, CompletionTokens: usage.Completion, TotalTokens: usage.Prompt + usage.Completion}})
	}
	return events
}

// stream sends turn as SSE chunks; usage, when not nil, in a last chunk with
// no choices, as OpenAI does for stream_options.include_usage. A turn with
// Cut drops the connection halfway, without [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, turn Turn, usage *Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	events := s.chunks(turn, usage)
	cutAt := len(events)
	if turn.Cut {
		cutAt = len(events) / 2
	}
	for i, ev := range events {
		if i == cutAt {
			// Drop the connection mid-stream, without [DONE].
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
		if turn.ChunkWait > 0 {
			select {
			case <-time.After(time.Duration(turn.ChunkWait)):
			case <-r.Context().Done():
				return
			}
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
	if turn.HoldEnd > 0 { // a server slow to end its streams
		select {
		case <-time.After(time.Duration(turn.HoldEnd)):
		case <-r.Context().Done():
		}
	}
}
