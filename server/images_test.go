//go:build unix

package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func pngBase64(t *testing.T, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// agent.run's images reach the model as image_url parts when the endpoint's
// model list says the model takes images (model.vision auto); when nothing
// says so, the run is refused before any call, naming the setting.
func TestRunWithImages(t *testing.T) {
	data := pngBase64(t, 12, 9)
	for _, tc := range []struct {
		name       string
		modalities map[string][]string
		want       string // the error; "" for a run
	}{
		{"the list says it takes images", map[string][]string{"scripted": {"text", "image"}}, ""},
		{"the list says nothing", nil, `the model "scripted" is not known to take images: set model.vision to true (--vision true)`},
		{"the list says it takes none", map[string][]string{"scripted": {"text"}}, `the endpoint's model list says the model "scripted" takes no images`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "A gray square."}}, InputModalities: tc.modalities})
			c := startServer(t, envFor(t, srv)...)
			c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
			var res runResult
			err := c.command("agent.run", map[string]any{"prompt": "What is this?", "images": []map[string]any{{"data": data, "mimeType": "image/png"}}}, &res)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || len(srv.Requests()) != 0 {
					t.Fatalf("%v (%d requests)", err, len(srv.Requests()))
				}
				return
			}
			if err != nil || res.Status != "done" {
				t.Fatalf("%v %+v", err, res)
			}
			if body := string(srv.Bodies()[0]); !strings.Contains(body, `"type":"image_url"`) || !strings.Contains(body, "data:image/png;base64,"+data) {
				t.Errorf("the request: %.400s", body)
			}
		})
	}
}

// Bad images are InvalidParams naming the image; a provider that refuses the
// images fails the run with an error naming model.vision.
func TestRunWithBadImages(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Error: &scripted.HTTPError{Status: 400, Message: "Invalid content type. image_url is only supported by certain models."}}}})
	c := startServer(t, envFor(t, srv, "AGENT_LSP_VISION=true")...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	for images, want := range map[string]string{
		`[{"data": "not base64!"}]`:                "images[0].data is not base64",
		`[{"path": "/x.png", "data": "AAAA"}]`:     "has both a path and data",
		`[{}]`:                                     "has neither a path nor data",
		`[{"path": "missing.png"}]`:                "missing.png does not exist",
		`[{"data": "aGVsbG8="}]`:                   "pasted image: not a PNG, JPEG, GIF or WebP image",
		`[{"data": "AAAA", "mimeType": "text/x"}]`: "image 1 is text/x, not an image",
	} {
		var res runResult
		err := c.command("agent.run", map[string]any{"prompt": "Look", "images": json.RawMessage(images)}, &res)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-32602") && !strings.Contains(err.Error(), "agent.run") {
			t.Errorf("%s: %v, want %q", images, err, want)
		}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Look", "images": []map[string]any{{"data": pngBase64(t, 3, 3)}}}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || !strings.Contains(res.Error, "refused the images") || !strings.Contains(res.Error, "set model.vision to false") {
		t.Errorf("%+v", res)
	}
}

// An ACP client's image blocks reach the model (the agent offers the image
// prompt capability).
func TestACPImagePrompt(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "A gray square."}}})
	c := startACP(t, false, envFor(t, srv, "AGENT_LSP_VISION=true"))
	session := c.newSession(copyFixture(t, "sample"))
	data := pngBase64(t, 7, 7)
	res, err := c.conn.Prompt(c.ctx(), acp.PromptRequest{SessionId: acp.SessionId(session),
		Prompt: []acp.ContentBlock{acp.TextBlock("What is this?"), acp.ImageBlock(data, "image/png")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%v %+v", err, res)
	}
	if body := string(srv.Bodies()[0]); !strings.Contains(body, "data:image/png;base64,"+data) {
		t.Errorf("the request: %.400s", body)
	}
}

// fetch_url asks the editor per host with the full URL; "Always for this
// session" allows the host for the session's next fetches.
func TestFetchAsksTheEditor(t *testing.T) {
	// HTTPS to loopback, which the list does not name: the user is asked
	// about the host, and once allowed the fetch still stops before any
	// connection (loopback only for a host the list names exactly). Nothing
	// leaves the machine, nor is anything dialed.
	url := "https://127.0.0.1:1/docs?token=abc"
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("fetch_url", map[string]any{"url": url})}},
		{ToolCalls: []scripted.ToolCall{call("fetch_url", map[string]any{"url": url + "&again=1"})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv)...)
	var mu sync.Mutex
	var asked []string
	c.askResult = func(params json.RawMessage) any {
		var p struct{ Message string }
		json.Unmarshal(params, &p)
		mu.Lock()
		asked = append(asked, p.Message)
		mu.Unlock()
		return map[string]string{"title": "Always for this session"}
	}
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Read the docs"}, &res); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "agent-lsp wants to fetch, in project sample:\n  "+url) || !strings.Contains(asked[0], "allows the host 127.0.0.1 for this session") {
		t.Errorf("asked %q", asked)
	}
	reqs := srv.Requests()
	n := 0
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			n++
			if !strings.Contains(m.Content, "127.0.0.1, a loopback address") {
				t.Errorf("fetch %d: %s", n, m.Content)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d fetches", n)
	}
}
