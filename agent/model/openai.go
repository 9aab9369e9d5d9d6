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
// OpenAI-compatible endpoint. Chat makes the call itself (stream.go); Models
// goes through go-openai's client.
type OpenAI struct {
	client  *openai.Client
	http    *http.Client
	chatURL string
	cfg     Config
	params  paramCache   // the tools' parameters as requests carry them
	msgs    messageCache // the messages as requests carry them
	readers streamReaders
	ends    streamEnds // streams read to their end after [DONE], on the side
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
	hc := &http.Client{Transport: chatTransport()}
	oc.HTTPClient = hc
	m := &OpenAI{client: openai.NewClientWithConfig(oc), http: hc, cfg: cfg}
	m.chatURL = m.BaseURL() + "/chat/completions"
	return m
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

// maxErrorBody bounds how much of a refused request's body is kept.
const maxErrorBody = 64 << 10

// attemptNote is what post saw of one refused attempt, since go-openai's
// errors carry no headers and drop the body fields they do not know
// (llama.cpp's n_ctx, for one).
type attemptNote struct {
	status     int
	retryAfter time.Duration // from the Retry-After header
	body       []byte        // the first maxErrorBody bytes of the body
}

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
// connection or a timed-out attempt; never another 4xx.
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
	var netErr net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamCut) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection reset") {
		return 0, true
	}
	return 0, false
}

// Chat implements Model with retries and a timeout per attempt.
func (m *OpenAI) Chat(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	model := cmp.Or(req.Model, m.cfg.Model)
	err := check(model, req)
	var body []byte
	if err == nil {
		body, err = appendRequest(make([]byte, 0, sizeHint(req)), model, req, &m.params, &m.msgs)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Attempts: 1, Err: redact(err, m.cfg.APIKey)}
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		var note attemptNote
		resp, err := m.once(ctx, body, onDelta, &note)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		status, retry := retryable(err)
		if ov, ok := overflowOf(err, &note, m.cfg.APIKey); ok {
			// Never retried, whatever the status: the same request would overflow again.
			return Response{}, &Error{Status: status, Attempts: attempt + 1, Err: ov}
		}
		lastErr = redact(err, m.cfg.APIKey)
		if !retry || attempt >= m.cfg.Retries {
			return Response{}, &Error{Status: status, Attempts: attempt + 1, Err: lastErr}
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

// redact removes the API key from an error's text, in case a server echoes it.
func redact(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
}

// once makes one attempt of a chat call whose request body is body.
func (m *OpenAI) once(ctx context.Context, body []byte, onDelta func(string), note *attemptNote) (Response, error) {
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
	resp, err := m.post(rctx, body, note)
	if err != nil {
		return Response{}, err
	}
	defer func() {
		if !handed {
			resp.Body.Close()
		}
	}()
	br := m.readers.get(resp.Body)
	r, done, err := read(br, onDelta)
	m.readers.put(br)
	if done && stop() { // stop is false once ctx ended: the body is dropped
		handed = true
		m.ends.finish(resp.Body, cancel)
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
