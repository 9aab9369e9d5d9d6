//go:build unix

package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tokens"
	"github.com/agent-lsp/agent-lsp/store"
)

func smallPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.RGBA{200, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sees(context.Context, string) error { return nil }

// An image attached to a prompt reaches the model as an image_url part;
// the same image attached again is stored once; events carry its reference
// only, never its bytes.
func TestImagePromptReachesTheModel(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "a dot"}, {Text: "the same dot"}}}, Config{Vision: sees})
	data := smallPNG(t, 30, 20)
	os.WriteFile(filepath.Join(h.roots["sample"], "shot.png"), data, 0o644)
	res := h.run(context.Background(), Request{Prompt: "what is this?", Images: []ImageInput{{Data: data, MimeType: "image/png"}}})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
	if body := string(h.srv.Bodies()[0]); !strings.Contains(body, `"type":"image_url"`) || !strings.Contains(body, url) || !strings.Contains(body, "[pasted image, 30×20]") {
		t.Errorf("the request: %.500s", body)
	}
	var human message.Message
	for _, e := range h.eventsOf("message") {
		if m := e.Data.(event.Message).Message; m.Role == message.Human {
			human = m
		}
	}
	if len(human.Images) != 1 || human.Images[0].Width != 30 || human.Images[0].Name != "pasted image" {
		t.Fatalf("the message event: %+v", human)
	}
	if b, _ := json.Marshal(human); strings.Contains(string(b), base64.StdEncoding.EncodeToString(data)) {
		t.Errorf("the event carries the image's bytes: %s", b)
	}
	res = h.run(context.Background(), Request{Session: res.Session, Prompt: "and this?", Images: []ImageInput{{Path: "shot.png"}}})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	if body := string(h.srv.Bodies()[1]); strings.Count(body, url) != 2 || !strings.Contains(body, "[shot.png, 30×20]") {
		t.Errorf("the second request shows both prompts' images: %.300s", body)
	}
	st, err := h.store.Load(context.Background(), res.Session, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Lists["images"]); n != 1 {
		t.Errorf("the session stores %d images, want 1", n)
	}
}

// A model that takes no images gets a clear error naming the setting
// before any call.
func TestImagePromptForAModelWithoutVision(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "never"}}}, Config{ModelName: "scripted"})
	_, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "look", Images: []ImageInput{{Data: smallPNG(t, 4, 4)}}, Editor: h.editor, Permissions: allowAll(false)})
	var ie *ImageError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `the model "scripted" is not known to take images: set model.vision to true (--vision true) if it does`) {
		t.Fatalf("%v", err)
	}
	if len(h.srv.Requests()) != 0 {
		t.Fatal("the model was called")
	}
	h = newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "never"}}}, Config{Vision: sees})
	for _, in := range []ImageInput{{Path: "missing.png"}, {Data: []byte("not an image")}, {Data: []byte("x"), MimeType: "text/plain"}, {}} {
		if _, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "look", Images: []ImageInput{in}, Editor: h.editor, Permissions: allowAll(false)}); !errors.As(err, &ie) {
			t.Errorf("%+v: %v", in, err)
		}
	}
}

// read_image shows the model an image of the project after the tool
// answers; a model without vision is not offered it.
func TestReadImage(t *testing.T) {
	script := scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("read_image", map[string]any{"path": "shot.png"})}}, {Text: "seen"}}}
	h := newHarness(t, script, Config{Vision: sees})
	os.WriteFile(filepath.Join(h.roots["sample"], "shot.png"), smallPNG(t, 8, 6), 0o644)
	if res := h.run(context.Background(), Request{Prompt: "look at shot.png"}); res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(h.srv.Bodies()[1], &req)
	last := req.Messages[len(req.Messages)-1]
	if prev := req.Messages[len(req.Messages)-2]; prev.Role != "tool" || !strings.Contains(string(prev.Content), "shot.png: 8×6 image/png") {
		t.Errorf("the tool answer: %s", prev.Content)
	}
	if last.Role != "user" || !strings.Contains(string(last.Content), "image_url") || !strings.Contains(string(last.Content), "[shot.png, 8×6]") {
		t.Errorf("the image after the tool answer: %s %.300s", last.Role, last.Content)
	}

	h = newHarness(t, script, Config{ModelName: "scripted"})
	os.WriteFile(filepath.Join(h.roots["sample"], "shot.png"), smallPNG(t, 8, 6), 0o644)
	h.run(context.Background(), Request{Prompt: "look at shot.png"})
	for _, tl := range h.srv.Requests()[0].Tools {
		if tl.Function.Name == "read_image" {
			t.Errorf("read_image is offered to a model without vision")
		}
	}
	if tm := toolMessages(h.srv.Requests()[1]); len(tm) != 1 || !strings.Contains(tm[0].Content, `unknown tool "read_image"`) {
		t.Errorf("without vision: %+v", tm)
	}
}

// Images count in the budget by OpenAI's tile formula.
func TestImagesCountInTheBudget(t *testing.T) {
	var c counter
	m := message.NewHuman("look")
	plain := c.message(m)
	m.Images = []message.Image{{ID: "img-1", MimeType: "image/png", Width: 1024, Height: 1024, Name: "a.png"}}
	if got := c.message(m); got-plain < tokens.Image(1024, 1024) {
		t.Errorf("with an image %d, without %d", got, plain)
	}
}

// A session stored before messages had images (testdata/before-images.db,
// written by the runtime before this change) loads and goes on, with an
// image.
func TestSessionStoredBeforeImagesLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	b, err := os.ReadFile("testdata/before-images.db")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o600)
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "a dot, and greet.go says hello"}}}, Config{Store: db, Vision: sees})
	ctx := context.Background()
	sess, err := db.Session(ctx, "s-before-images")
	if err != nil {
		t.Fatal(err)
	}
	sess.Root = h.roots["sample"] // the folder it worked in, on this machine
	if err := db.PutSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	msgs, err := h.rt.Transcript(ctx, sess.ID, "")
	if err != nil || len(msgs) != 4 || msgs[0].Content != "What does greet.go say?" || msgs[3].Content != "greet.go says hello." {
		t.Fatalf("%v: %+v", err, msgs)
	}
	res := h.run(ctx, Request{Session: sess.ID, Prompt: "And this?", Images: []ImageInput{{Data: smallPNG(t, 5, 5)}}})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	if body := string(h.srv.Bodies()[0]); !strings.Contains(body, "What does greet.go say?") || !strings.Contains(body, "image_url") {
		t.Errorf("the request: %.400s", body)
	}
}

// A prompt with images that another window (whose model takes images)
// queues into a running session is checked against the running session's
// model, by its own window's settings: that model sees them. Here it takes
// none, so the prompt is refused and the run goes on without it.
func TestQueuedImagesMeetTheRunningModel(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 2"})}},
		{Text: "noted"}}}, Config{ModelName: "scripted"})
	other, err := New(Config{Workspace: h.ws, Store: h.store, Model: h.rt.cfg.Model, ModelName: "gpt-4o", Vision: sees})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() {
		done <- h.run(context.Background(), Request{Prompt: "start", Project: "sample", Permissions: allowAll(true)})
	}()
	waitFor(t, "the slow tool", func() bool { return len(h.eventsOf("tool.start")) > 0 })
	session := h.eventsOf("tool.start")[0].Session
	_, err = h.reg.Run(context.Background(), other, Request{Session: session, Prompt: "look", Images: []ImageInput{{Data: smallPNG(t, 4, 4)}}})
	var ie *ImageError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `the model "scripted" is not known to take images`) {
		t.Fatalf("queue an image into a run whose model takes none: %v", err)
	}
	if res := <-done; res.Status != "done" || res.Reply != "noted" {
		t.Fatalf("%+v", res)
	}
	if q := h.eventsOf("message.queued"); len(q) != 0 {
		t.Fatalf("%d prompts were queued", len(q))
	}
}
