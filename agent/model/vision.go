package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ErrImagesRefused is wrapped by the error of a request with images that
// the endpoint refused for them (a model that takes no images).
var ErrImagesRefused = errors.New("the model refused the images")

// refusesImages reports whether a refused request was refused for its
// images: it had some, the endpoint answered 400, 415 or 422, and what it
// said is about images ("image_url is only supported by certain models",
// "this model does not support image input", "not a multimodal model").
func refusesImages(status int, creq openai.ChatCompletionRequest, err error, body []byte) bool {
	if status != 400 && status != 415 && status != 422 {
		return false
	}
	if !slices.ContainsFunc(creq.Messages, func(m openai.ChatCompletionMessage) bool {
		return slices.ContainsFunc(m.MultiContent, func(p openai.ChatMessagePart) bool { return p.ImageURL != nil })
	}) {
		return false
	}
	said := strings.ToLower(err.Error() + " " + string(body))
	for _, w := range []string{"image", "vision", "multimodal", "multi-modal", "modalit"} {
		if strings.Contains(said, w) {
			return true
		}
	}
	return false
}

// knownVision tells, by model name prefix, whether well-known models take
// images (the longest matching prefix wins, as for context sizes).
var knownVision = []struct {
	prefix string
	vision bool
}{
	{"gpt-3.5", false},
	{"gpt-4", false},
	{"gpt-4-turbo", true},
	{"gpt-4-vision", true},
	{"gpt-4o", true},
	{"gpt-4.1", true},
	{"gpt-4.5", true},
	{"gpt-5", true},
	{"chatgpt-4o", true},
	{"o1", true},
	{"o1-mini", false},
	{"o1-preview", false},
	{"o3", true},
	{"o3-mini", false},
	{"o4-mini", true},
	{"claude-3", true},
	{"claude-sonnet-4", true},
	{"claude-opus-4", true},
	{"claude-haiku-4", true},
	{"claude-4", true},
	{"gemini", true},
	{"gemma3", true},
	{"gemma-3", true},
	{"llava", true},
	{"bakllava", true},
	{"llama3.2-vision", true},
	{"llama-3.2-11b-vision", true},
	{"llama-3.2-90b-vision", true},
	{"llama4", true},
	{"llama-4", true},
	{"qwen2-vl", true},
	{"qwen2.5-vl", true},
	{"qwen2.5vl", true},
	{"qwen-vl", true},
	{"qwen3-vl", true},
	{"pixtral", true},
	{"mistral-small3.1", true},
	{"mistral-small-3.1", true},
	{"mistral-medium", true},
	{"minicpm-v", true},
	{"moondream", true},
	{"granite3.2-vision", true},
	{"grok-2-vision", true},
	{"grok-4", true},
	{"deepseek", false},
	{"codestral", false},
	{"qwen2.5-coder", false},
	{"gpt-oss", false},
}

// KnownVision reports whether a well-known model takes images; known is
// false for a model the table does not name.
func KnownVision(name string) (vision, known bool) {
	n := strings.ToLower(name)
	if i := strings.LastIndex(n, "/"); i >= 0 {
		n = n[i+1:] // "openai/gpt-4o" on a router
	}
	best := 0
	for _, k := range knownVision {
		if strings.HasPrefix(n, k.prefix) && len(k.prefix) > best {
			best, vision = len(k.prefix), k.vision
		}
	}
	return vision, best > 0
}

// listedVision reads what a model list entry says of the model's input,
// where it says it: "input_modalities" (OpenRouter's, also under
// "architecture"), "modalities" ({"input": [...]} or a list), or
// "capabilities" (a list naming "vision", or an object with "vision").
// nil when the entry says nothing of it.
func listedVision(entry json.RawMessage) *bool {
	var e struct {
		InputModalities []string        `json:"input_modalities"`
		Modalities      json.RawMessage `json:"modalities"`
		Capabilities    json.RawMessage `json:"capabilities"`
		Architecture    *struct {
			InputModalities []string `json:"input_modalities"`
		} `json:"architecture"`
	}
	if json.Unmarshal(entry, &e) != nil {
		return nil
	}
	yes := func(v bool) *bool { return &v }
	hasImage := func(list []string) *bool {
		return yes(slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, "image") || strings.EqualFold(s, "vision") }))
	}
	switch {
	case e.InputModalities != nil:
		return hasImage(e.InputModalities)
	case e.Architecture != nil && e.Architecture.InputModalities != nil:
		return hasImage(e.Architecture.InputModalities)
	case len(e.Modalities) > 0 && !bytes.Equal(e.Modalities, []byte("null")):
		var in struct {
			Input []string `json:"input"`
		}
		var list []string
		if json.Unmarshal(e.Modalities, &in) == nil && in.Input != nil {
			return hasImage(in.Input)
		}
		if json.Unmarshal(e.Modalities, &list) == nil {
			return hasImage(list)
		}
	case len(e.Capabilities) > 0 && !bytes.Equal(e.Capabilities, []byte("null")):
		var list []string
		var obj map[string]any
		if json.Unmarshal(e.Capabilities, &list) == nil {
			return hasImage(list)
		}
		if json.Unmarshal(e.Capabilities, &obj) == nil {
			v, _ := obj["vision"].(bool)
			return yes(v)
		}
	}
	return nil
}
