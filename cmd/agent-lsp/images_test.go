//go:build unix

package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func writePNG(t *testing.T, path string, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// run --image sends the image to the model as an image_url part; a model
// not known to take images gets a clear error naming the setting before
// any call.
func TestRunWithImage(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "A gray rectangle."})
	shot := filepath.Join(t.TempDir(), "shot.png")
	data := writePNG(t, shot, 10, 6)
	out, errOut, code := c.run(t, "", "run", "--vision", "true", "--image", shot, "what is this?")
	if code != 0 || out != "A gray rectangle.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	body := string(c.srv.Bodies()[0])
	if !strings.Contains(body, `"type":"image_url"`) || !strings.Contains(body, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data)) {
		t.Errorf("the request: %.600s", body)
	}

	c = newCLI(t, scripted.Turn{Text: "never"})
	out, errOut, code = c.run(t, "", "run", "--json", "--image", shot, "what is this?")
	_, res := jsonLines(t, out)
	if code == 0 || res["status"] != "failed" || !strings.Contains(fmt.Sprint(res["error"]), `the model "scripted" is not known to take images: set model.vision to true (--vision true)`) {
		t.Fatalf("exit %d, result %v, stderr %s", code, res, errOut)
	}
	if n := len(c.srv.Requests()); n != 0 {
		t.Errorf("%d model calls", n)
	}
	if _, errOut, code := c.run(t, "", "run", "--image", shot, "--resume", "s-x"); code != 2 || !strings.Contains(errOut, "--image attaches to a prompt") {
		t.Errorf("--image with --resume: exit %d %s", code, errOut)
	}
}

// fetch_url in a headless run: denied without --allow-fetch, naming it; with
// it, a loopback page of the test is reduced to text, a redirect to a
// loopback host that is not allowed is refused and never reached, and a 50 MB
// answer is cut.
func TestRunFetch(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "the other service")
	}))
	defer other.Close()
	otherPort := other.Listener.Addr().(*net.TCPAddr).Port
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><script>evil()</script></head><body><h1>Install</h1><p>Run <code>make</code>.</p></body></html>`)
		case "/away":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", otherPort), http.StatusFound)
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			line := strings.Repeat("z", 1023) + "\n"
			for range 50 << 10 {
				if _, err := fmt.Fprint(w, line); err != nil {
					return
				}
			}
		}
	}))
	defer web.Close()
	fetches := func(paths ...string) []scripted.Turn {
		var turns []scripted.Turn
		for _, p := range paths {
			turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("fetch_url", map[string]any{"url": web.URL + p})}})
		}
		return append(turns, scripted.Turn{Text: "read"})
	}

	// Denied before any lookup or connection: nothing leaves the machine.
	c := newCLI(t, scripted.Turn{ToolCalls: []scripted.ToolCall{call("fetch_url", map[string]any{"url": "https://docs.example.org/guide"})}}, scripted.Turn{Text: "read"})
	if _, errOut, code := c.run(t, "", "run", "read the docs"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	tm := toolContents(c.srv.Requests()[1])
	if len(tm) != 1 || !strings.Contains(tm[0], "fetch_url https://docs.example.org/guide: no allowed fetch host names docs.example.org; this run cannot ask (headless), so it is denied: allow it with --allow-fetch docs.example.org") {
		t.Errorf("without --allow-fetch: %q", tm)
	}

	c = newCLI(t, fetches("/page", "/away", "/big")...)
	if _, errOut, code := c.run(t, "", "run", "--allow-fetch", "127.0.0.1", "read the docs"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	reqs := c.srv.Requests()
	tm = toolContents(reqs[len(reqs)-1])
	if len(tm) != 3 {
		t.Fatalf("tool answers: %q", tm)
	}
	if !strings.Contains(tm[0], "fetched "+web.URL+"/page (200 OK, text/html") || !strings.Contains(tm[0], "# Install") ||
		!strings.Contains(tm[0], "Run `make`.") || !strings.Contains(tm[0], "untrusted content") || strings.Contains(tm[0], "evil()") {
		t.Errorf("the page: %s", tm[0])
	}
	if !strings.Contains(tm[1], fmt.Sprintf("redirected to http://localhost:%d/, whose host localhost is not allowed: not followed", otherPort)) || otherHits.Load() != 0 {
		t.Errorf("the redirect (the other server reached %d times): %s", otherHits.Load(), tm[1])
	}
	if !strings.Contains(tm[2], "cut: only the first 2097152 bytes were read") {
		t.Errorf("50 MB: %.300s", tm[2])
	}
}

// toolContents are the contents of a request's tool messages, in order.
func toolContents(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}
