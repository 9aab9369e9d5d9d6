package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ModelInfo is one model an endpoint offers.
type ModelInfo struct {
	ID      string `json:"id"`
	OwnedBy string `json:"ownedBy,omitempty"`
	// Vision is whether the model takes images, when the list says
	// (listedVision); nil when it does not.
	Vision *bool `json:"vision,omitempty"`
}

// ErrNoModelList: the endpoint has no model list (it answered 404, 405 or
// 501 to GET /models). Many local servers have none; chat may still work.
var ErrNoModelList = errors.New("the endpoint has no model list")

// ErrKeyRefused: the endpoint answered 401 to GET /models, refusing the API
// key sent (or asking for one when none was).
var ErrKeyRefused = errors.New("the endpoint refused the API key")

// ErrUnreachable: no connection to the endpoint could be made (refused,
// unknown host, no route) or it did not answer in time.
var ErrUnreachable = errors.New("the endpoint is unreachable")

// StatusError is the HTTP status an endpoint answered with; Models's
// errors wrap one when the endpoint answered.
type StatusError struct {
	Code   int    // e.g. 404
	Status string // e.g. "404 Not Found"
}

func (e *StatusError) Error() string { return e.Status }

// BaseURL is the endpoint's base URL, without a trailing slash: the
// configured one, else go-openai's default (OpenAI's API).
func (m *OpenAI) BaseURL() string {
	if m.cfg.BaseURL != "" {
		return strings.TrimRight(m.cfg.BaseURL, "/")
	}
	return strings.TrimRight(openai.DefaultConfig("").BaseURL, "/")
}

// Models lists the endpoint's models (GET {baseURL}/models, go-openai's
// ListModels), sorted by ID. It makes one attempt, bounded by ctx and the
// Config's Timeout. Its errors name the URL and never hold the API key: a
// 404, 405 or 501 wraps ErrNoModelList, a 401 ErrKeyRefused, and a failed
// connection or a deadline ErrUnreachable.
func (m *OpenAI) Models(ctx context.Context) ([]ModelInfo, error) {
	target := m.BaseURL() + "/models"
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	// go-openai's list keeps only a model's ID and owner: the body is read
	// again for what some lists say of a model's input (listedVision).
	var body bytes.Buffer
	oc := m.oc
	oc.HTTPClient = &http.Client{Transport: teeTransport{base: m.transport, to: &body}}
	list, err := openai.NewClientWithConfig(oc).ListModels(ctx)
	if err != nil {
		return nil, redact(m.modelsError(ctx, target, err), m.cfg.APIKey)
	}
	var raw struct {
		Data []json.RawMessage `json:"data"`
	}
	json.Unmarshal(body.Bytes(), &raw)
	vision := map[string]*bool{}
	for _, e := range raw.Data {
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(e, &id) == nil {
			vision[id.ID] = listedVision(e)
		}
	}
	out := make([]ModelInfo, 0, len(list.Models))
	for _, mo := range list.Models {
		out = append(out, ModelInfo{ID: mo.ID, OwnedBy: mo.OwnedBy, Vision: vision[mo.ID]})
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// teeTransport copies the body of a successful answer to to, as it is
// read, up to maxListBody bytes.
type teeTransport struct {
	base http.RoundTripper
	to   *bytes.Buffer
}

const maxListBody = 8 << 20

func (t teeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && resp.StatusCode < http.StatusBadRequest {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, &limitedWriter{w: t.to, n: maxListBody}), resp.Body}
	}
	return resp, err
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Offers reports whether an endpoint that lists models serves the model
// name: it is listed, or name has no tag and "name:latest" is listed (Ollama
// resolves an untagged name to its latest tag), or the endpoint is a
// llama.cpp server (one model, owned by "llamacpp"), which serves the one
// model it runs under any name.
func Offers(models []ModelInfo, name string) bool {
	if len(models) == 1 && models[0].OwnedBy == "llamacpp" {
		return true
	}
	return slices.ContainsFunc(models, func(m ModelInfo) bool {
		return m.ID == name || (!strings.Contains(name, ":") && m.ID == name+":latest")
	})
}

// modelsError says why GET target failed.
func (m *OpenAI) modelsError(ctx context.Context, target string, err error) error {
	status, statusText, detail := httpFailure(err)
	se := &StatusError{Code: status, Status: statusText}
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented:
		return fmt.Errorf("GET %s: %w: %w", target, se, ErrNoModelList)
	case status == http.StatusUnauthorized:
		// The server's message is left out: OpenAI's quotes part of the key.
		if m.cfg.APIKey == "" {
			return fmt.Errorf("GET %s: %w: %w: none was sent, and it wants one", target, se, ErrKeyRefused)
		}
		return fmt.Errorf("GET %s: %w: %w", target, se, ErrKeyRefused)
	case status != 0:
		if detail != "" && detail != http.StatusText(status) {
			return fmt.Errorf("GET %s: %w: %s", target, se, detail)
		}
		return fmt.Errorf("GET %s: %w", target, se)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return fmt.Errorf("GET %s: %w", target, ctx.Err())
	}
	cause := err
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		cause = ue.Err // its text repeats the method and URL
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fmt.Errorf("GET %s: %w: no answer in time (%w)", target, ErrUnreachable, cause)
	case errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial"):
		return fmt.Errorf("GET %s: %w: %w", target, ErrUnreachable, cause)
	case errors.As(err, &netErr):
		return fmt.Errorf("GET %s: the connection failed: %w", target, cause)
	}
	// A 2xx answer that is not a model list (a web page, another API).
	return fmt.Errorf("GET %s: the answer is not a model list: %w", target, cause)
}

// httpFailure is the status ("404 Not Found") and the server's own message,
// cut short, of an HTTP error go-openai returned; status 0 when err is not one.
func httpFailure(err error) (status int, statusText, detail string) {
	var reqErr *openai.RequestError
	var apiErr *openai.APIError
	switch {
	case errors.As(err, &reqErr): // first: an unparsable body comes as a RequestError around an empty APIError
		status, statusText = reqErr.HTTPStatusCode, reqErr.HTTPStatus
		if reqErr.Err != nil {
			if errors.As(reqErr.Err, &apiErr) && apiErr.Message != "" {
				detail = apiErr.Message
			}
		}
		if detail == "" {
			detail = string(reqErr.Body)
		}
	case errors.As(err, &apiErr):
		status, statusText, detail = apiErr.HTTPStatusCode, apiErr.HTTPStatus, apiErr.Message
	default:
		return 0, "", ""
	}
	if statusText == "" {
		statusText = fmt.Sprintf("%d %s", status, http.StatusText(status))
	}
	detail = strings.Join(strings.Fields(detail), " ")
	if r := []rune(detail); len(r) > 200 {
		detail = string(r[:200]) + "…"
	}
	return status, statusText, detail
}
