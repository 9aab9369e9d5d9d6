package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/agent-lsp/agent-lsp/agent/model"
)

// Reasons a run cannot start or failed for, which a client offers an action
// for: the data.reason of a JSON-RPC error, a failed Result's Reason.
const (
	ReasonNoAPIKey     = "no-api-key"           // the endpoint needs a key and none is set: set one
	ReasonKeyRefused   = "key-refused"          // the endpoint refused the key (401, 403): set another
	ReasonModelUnknown = "model-unknown"        // the endpoint has no such model: pick another
	ReasonUnreachable  = "endpoint-unreachable" // the endpoint cannot be reached: fix its URL or start it
)

// reasonOf is the Reason of a run that failed with err ("" for a failure
// no setting fixes).
func reasonOf(err error) string {
	var over *model.OverflowError
	var me *model.Error
	if errors.As(err, &over) || !errors.As(err, &me) {
		return ""
	}
	switch s := me.Status; {
	case s == 401 || s == 403:
		return ReasonKeyRefused
	case s == 404:
		return ReasonModelUnknown
	case s == 0 && !errors.Is(err, context.Canceled):
		return ReasonUnreachable
	}
	return ""
}

// explain turns why a run failed into what the user reads in its result: a
// sentence saying what failed and what to do. The full error goes to the
// log (Config.Log).
func (rt *Runtime) explain(r *run, err error) string {
	rt.cfg.Log("session %s failed: %v", r.session.ID, err)
	endpoint := cmp.Or(rt.cfg.Endpoint, "the model endpoint")
	var over *model.OverflowError
	var me *model.Error
	if errors.As(err, &over) {
		return firstLine(err.Error()) // the runtime's own sentence comes first
	}
	if errors.Is(err, model.ErrImagesRefused) && errors.As(err, &me) {
		return fmt.Sprintf("%s refused the images for the model %q (HTTP %d: %s): it may not take images; set model.vision to false to keep images out of its requests, or use a model that takes them",
			endpoint, r.model, me.Status, providerMessage(me.Err))
	}
	if errors.As(err, &me) {
		tries := ""
		if me.Attempts > 1 {
			tries = fmt.Sprintf(" after %d attempts", me.Attempts)
		}
		switch s := me.Status; {
		case s == 401 || s == 403:
			return fmt.Sprintf("%s refused the API key (HTTP %d): set a valid key in OPENAI_API_KEY (or the variable model.apiKeyEnv names)", endpoint, s)
		case s == 404:
			return fmt.Sprintf("%s has no model %q (HTTP 404): pick one the endpoint lists, or set the model", endpoint, r.model)
		case s == 429:
			return fmt.Sprintf("%s is rate limiting%s (HTTP 429): wait a moment, then resume the session", endpoint, tries)
		case s >= 500:
			return fmt.Sprintf("%s failed%s (HTTP %d): resume the session when it is back", endpoint, tries, s)
		case s == 0 && isRefused(err):
			return fmt.Sprintf("cannot reach %s (connection refused)%s: is the model server running? (OPENAI_BASE_URL sets where it is), then resume the session", endpoint, tries)
		case s == 0 && isTimeout(err):
			return fmt.Sprintf("%s did not answer in time%s: resume the session when it answers", endpoint, tries)
		case s == 0:
			return fmt.Sprintf("cannot reach %s%s: %s; resume the session when it is back", endpoint, tries, firstLine(me.Err.Error()))
		}
		return fmt.Sprintf("%s refused the request (HTTP %d): %s", endpoint, me.Status, providerMessage(me.Err))
	}
	return firstLine(err.Error())
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// firstLine is the first line of s, cut to 300 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// providerMessage is what the provider said, without go-openai's
// "error, status code: ..., message:" prefix.
func providerMessage(err error) string {
	msg := err.Error()
	if _, m, ok := strings.Cut(msg, "message: "); ok {
		msg = m
	}
	return firstLine(msg)
}
