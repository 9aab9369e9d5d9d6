package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

var pixel = message.ImageData{Image: message.Image{ID: "img-1", MimeType: "image/png", Width: 1, Height: 1, Size: 4, Name: "shot.png"}, Data: []byte("\x89PNG")}

// A human message's images reach the endpoint as image_url parts with data
// URLs after its text; a tool answer's images follow the turn's tool
// answers in one user message (a tool message carries text only).
func TestImagesAreImageURLParts(t *testing.T) {
	srv, m := serve(t, scripted.Turn{Text: "a red dot"})
	human := message.NewHuman("what is this?")
	human.Images = []message.Image{pixel.Image}
	ai := message.NewAI("", message.ToolCall{ID: "c1", Name: "read_image", Args: `{}`}, message.ToolCall{ID: "c2", Name: "read_file", Args: `{}`})
	t1 := message.NewTool("c1", "the image follows")
	t1.Images = []message.Image{pixel.Image, {ID: "img-gone", MimeType: "image/png", Name: "gone.png"}}
	t2 := message.NewTool("c2", "text")
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{human, ai, t1, t2}, Images: message.Images{pixel.ID: pixel}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := srv.Bodies()[0]
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,tool,user" {
		t.Fatalf("roles %v", roles)
	}
	url := `"image_url":{"url":"data:image/png;base64,iVBORw==","detail":"auto"}`
	if c := string(req.Messages[0].Content); !strings.Contains(c, `{"type":"text","text":"what is this?"}`) || !strings.Contains(c, url) {
		t.Errorf("the prompt: %s", c)
	}
	if c := string(req.Messages[4].Content); !strings.Contains(c, "The images the tools returned:") || !strings.Contains(c, "(c1) [shot.png, 1×1]") ||
		!strings.Contains(c, url) || !strings.Contains(c, "(c1) [gone.png: no longer available]") {
		t.Errorf("the tools' images: %s", c)
	}
	if c := string(req.Messages[2].Content); c != `"the image follows"` {
		t.Errorf("the tool answer: %s", c)
	}
}

// A provider's refusal of the images is told apart from other refusals.
func TestImagesRefused(t *testing.T) {
	_, m := serve(t, scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "Invalid content type. image_url is only supported by certain models."}})
	human := message.NewHuman("look")
	human.Images = []message.Image{pixel.Image}
	_, err := m.Chat(context.Background(), Request{Messages: []message.Message{human}, Images: message.Images{pixel.ID: pixel}}, nil)
	if !errors.Is(err, ErrImagesRefused) {
		t.Errorf("with images: %v", err)
	}
	_, m = serve(t, scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "Invalid content type. image_url is only supported by certain models."}})
	if _, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("look")}}, nil); err == nil || errors.Is(err, ErrImagesRefused) {
		t.Errorf("without images: %v", err)
	}
}

func TestKnownVision(t *testing.T) {
	for name, want := range map[string][2]bool{
		"gpt-4o-mini": {true, true}, "openai/gpt-4o": {true, true}, "gpt-4": {false, true}, "gpt-4-turbo": {true, true},
		"o3-mini": {false, true}, "o3": {true, true}, "claude-sonnet-4-5": {true, true}, "llava:13b": {true, true},
		"llama3.2-vision": {true, true}, "qwen2.5-coder:7b": {false, true}, "scripted": {false, false}, "mystery": {false, false},
	} {
		if v, k := KnownVision(name); [2]bool{v, k} != want {
			t.Errorf("KnownVision(%q) = %v, %v; want %v", name, v, k, want)
		}
	}
}

// Model lists that say which models take images are read: OpenRouter's
// architecture.input_modalities (as the test double lists them), and the
// shapes other servers use.
func TestListedVision(t *testing.T) {
	srv, err := scripted.Start("127.0.0.1:0", scripted.Script{Models: []string{"eyes", "blind", "quiet"},
		InputModalities: map[string][]string{"eyes": {"text", "image"}, "blind": {"text"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	list, err := NewOpenAI(Config{BaseURL: srv.URL}).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range list {
		got[m.ID] = "nil"
		if m.Vision != nil {
			got[m.ID] = map[bool]string{true: "yes", false: "no"}[*m.Vision]
		}
	}
	if got["eyes"] != "yes" || got["blind"] != "no" || got["quiet"] != "nil" {
		t.Errorf("listed: %v", got)
	}
	for entry, want := range map[string]string{
		`{"input_modalities":["text","image"]}`: "yes", `{"modalities":{"input":["text"]}}`: "no", `{"modalities":["text","vision"]}`: "yes",
		`{"capabilities":["completion","vision"]}`: "yes", `{"capabilities":{"vision":false}}`: "no", `{"id":"x"}`: "nil", `[1]`: "nil",
	} {
		v := listedVision(json.RawMessage(entry))
		s := "nil"
		if v != nil {
			s = map[bool]string{true: "yes", false: "no"}[*v]
		}
		if s != want {
			t.Errorf("%s: %s, want %s", entry, s, want)
		}
	}
}
