package session

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/model"
)

// With model.vision auto, the endpoint's model list is asked once for every
// model and every run of a backend (each run's start checks whether its
// model takes images), and again only while it could not be reached.
func TestVisionListAskedOncePerEndpoint(t *testing.T) {
	var asked atomic.Int32
	var down atomic.Bool
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		if down.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[`+
			`{"id":"sees","object":"model","architecture":{"input_modalities":["text","image"]}},`+
			`{"id":"blind","object":"model","architecture":{"input_modalities":["text"]}}]}`)
	}))
	defer srv.Close()
	v := newVision("auto", model.NewOpenAI(model.Config{BaseURL: srv.URL + "/v1", Retries: -1}))
	ctx := context.Background()
	if err := v.check(ctx, "sees"); err == nil {
		t.Fatal("the list could not be read, yet the model takes images")
	}
	down.Store(false)
	for range 3 {
		if err := v.check(ctx, "sees"); err != nil {
			t.Errorf("sees: %v", err)
		}
		if err := v.check(ctx, "blind"); err == nil {
			t.Error("blind takes images")
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the list was asked %d times, want 2 (once unreachable, once answered)", n)
	}
}
