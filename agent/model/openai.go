package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// Config configures an OpenAI-compatible endpoint.
type Config struct {
	BaseURL string        // e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	Model   string        // model name
	APIKey  string        // never logged or echoed
	Timeout time.Duration // per request (whole stream); default 120s
	Retries int           // retries after the first attempt; default 4
	// Backoff is the first retry delay, doubled per attempt with jitter; default 500ms.
	Backoff time.Duration
}

// OpenAI is a Model over the streaming chat completions of an
// OpenAI-compatible endpoint, called through go-openai's client
// (CreateChatCompletionStream, ListModels). What the client does not give,
// this type adds around it and only that: retries with backoff (honouring
// Retry-After), a timeout per attempt, a stream cut before the model
// finished, the refused body's fields a context overflow is recognized by,
// and the end of a stream's body read on the side (stream.go).
type OpenAI struct {
	oc        openai.ClientConfig // the client's configuration; each attempt gets its own HTTP client over transport
	transport http.RoundTripper   // chatTransport, shared by every model
	cfg       Config
	ends      streamEnds  // streams read to their end after [DONE], on the side
	noFormat  atomic.Bool // the endpoint refused response_format: it is not sent again
}

// NewOpenAI returns a model for cfg.
func NewOpenAI(cfg Config) *OpenAI {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	} else if cfg.Retries == 0 {
		cfg.Retries = 4
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	oc.HTTPClient = &http.Client{Transport: chatTransport()}
	return &OpenAI{oc: oc, transport: chatTransport(), cfg: cfg}
}

// writeBuffer is the size of a connection's write buffer: a chat request of
// about 16k tokens of context fits.
const writeBuffer = 64 << 10

// chatTransport is the transport of every model's calls, built once and
// shared as http.DefaultTransport was (so models made for new settings reuse
// its idle connections, and none are left open by a model dropped): the
// default one, but writing a request from one buffer that holds most bodies
// whole. With the default 4 KB buffer, net/http copies the rest of a body
// through a new buffer of its size for every request (io.Copy through a
// LimitReader into the connection's ReadFrom) and writes it in pieces.
var chatTransport = sync.OnceValue(func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.WriteBufferSize = writeBuffer
	return tr
})

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// Error is a model call that failed for good.
type Error struct {
	Status   int // HTTP status, 0 for transport errors
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("model call failed after %d attempt(s): %v", e.Attempts, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// retryable reports whether err is worth another attempt: 429, 5xx, a dropped
// connection or a timed-out attempt; never another 4xx, nor a host name that
// does not resolve.
func retryable(err error) (int, bool) {
	// RequestError first: when go-openai cannot parse a body such as
	// {"error":"text"}, it wraps an empty *APIError without a status in one.
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode, reqErr.HTTPStatusCode == 429 || reqErr.HTTPStatusCode >= 500
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode, apiErr.HTTPStatusCode == 429 || apiErr.HTTPStatusCode >= 500
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return 0, false // no such host: asking again gets the same answer
	}
	var netErr net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamCut) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection reset") {
		return 0, true
	}
	return 0, false
}

// Chat implements Model with retries and a timeout per attempt.
func (m *OpenAI) Chat(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	if m.noFormat.Load() {
		req.OutputSchema = nil
	}
	creq := chatRequest(cmp.Or(req.Model, m.cfg.Model), req)
	for attempt := 0; ; attempt++ {
		var note attemptNote
		resp, err := m.once(ctx, creq, onDelta, &note)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		status, retry := retryable(err)
		if creq.ResponseFormat != nil && refusesFormat(status, err, &note) {
			// Asked once more without it, and never again: the prompt describes the schema too.
			m.noFormat.Store(true)
			creq.ResponseFormat = nil
			attempt--
			continue
		}
		if ov, ok := overflowOf(err, &note, m.cfg.APIKey); ok {
			// Never retried, whatever the status: the same request would overflow again.
			return Response{}, &Error{Status: status, Attempts: attempt + 1, Err: ov}
		}
		if !retry || attempt >= m.cfg.Retries {
			err = redact(err, m.cfg.APIKey)
			if refusesImages(status, creq, err, note.body) {
				err = fmt.Errorf("%w: %w", ErrImagesRefused, err)
			}
			return Response{}, &Error{Status: status, Attempts: attempt + 1, Err: err}
		}
		delay := m.cfg.Backoff << attempt
		delay = delay/2 + rand.N(delay/2+1) // jitter: [d/2, d]
		if note.retryAfter > delay {
			delay = note.retryAfter
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
	}
}

// refusesFormat reports whether a failed attempt was a 400 about the
// response_format field (an endpoint without structured output).
func refusesFormat(status int, err error, note *attemptNote) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.Param != nil && strings.Contains(*apiErr.Param, "response_format") {
		return true
	}
	return strings.Contains(err.Error(), "response_format") || strings.Contains(string(note.body), "response_format")
}

// once makes one attempt of the chat call creq.
func (m *OpenAI) once(ctx context.Context, creq openai.ChatCompletionRequest, onDelta func(string), note *attemptNote) (Response, error) {
	m.ends.wait(ctx)
	// The request follows ctx until its stream ended, and not after: the
	// end of the body is read once the call returned (streamEnds), when the
	// caller may have cancelled ctx already, which would close the
	// connection.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.Timeout)
	stop := context.AfterFunc(ctx, cancel)
	handed := false // the body and cancel went to m.ends
	defer func() {
		if !handed {
			stop()
			cancel()
		}
	}()
	stream, err := m.client(note).CreateChatCompletionStream(rctx, creq)
	if err != nil {
		return Response{}, err
	}
	r, err := read(stream, onDelta)
	if err == nil && note.stream != nil && !note.stream.ended && stop() { // stop is false once ctx ended: the body is dropped
		handed = true
		m.ends.finish(note.stream.ReadCloser, cancel)
	} else {
		stream.Close()
	}
	return r, err
}

// callAccumulator assembles streamed tool-call deltas. Deltas carry an Index;
// some servers send none, and then a delta continues the last call unless it
// starts a new ID.
type callAccumulator struct {
	calls []message.ToolCall
	byIdx map[int]int
}

func (a *callAccumulator) add(tc openai.ToolCall) {
	if a.byIdx == nil {
		a.byIdx = map[int]int{}
	}
	i := -1
	if tc.Index != nil {
		if j, ok := a.byIdx[*tc.Index]; ok {
			i = j
		}
	} else if len(a.calls) > 0 && (tc.ID == "" || tc.ID == a.calls[len(a.calls)-1].ID) {
		i = len(a.calls) - 1
	}
	if i < 0 {
		a.calls = append(a.calls, message.ToolCall{})
		i = len(a.calls) - 1
		if tc.Index != nil {
			a.byIdx[*tc.Index] = i
		}
	}
	c := &a.calls[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Function.Name != "" {
		c.Name += tc.Function.Name
	}
	c.Args += tc.Function.Arguments
}
