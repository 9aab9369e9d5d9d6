// Package model is the agent's port to a chat model, and its implementation
// over the OpenAI chat-completions protocol (OpenAI, Ollama, vLLM, llama.cpp,
// or the scripted test double).
package model

import (
	"context"
	"encoding/json"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema
}

// Request is one chat call.
type Request struct {
	Messages []message.Message
	Tools    []ToolSpec
	Model    string // overrides the configured model for this request when set
	// Images holds the bytes of the images the messages show, by ID (the
	// session's: read-only).
	Images message.Images
	// OutputSchema, when set, is a JSON Schema the answer's text must be
	// valid against: sent as response_format (json_schema) to an endpoint
	// that takes it. An endpoint that refuses the field (400) is asked once
	// more without it, and then never again with it (the prompt says it too).
	OutputSchema json.RawMessage
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int     `json:"promptTokens"`
	CompletionTokens int     `json:"completionTokens"`
	TotalTokens      int     `json:"totalTokens"`
	Cost             float64 `json:"cost,omitzero"` // USD, when the price table has the model
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.CompletionTokens + o.CompletionTokens, u.TotalTokens + o.TotalTokens, u.Cost + o.Cost}
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Cost is what u cost at p.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.PromptTokens)*p.Input + float64(u.CompletionTokens)*p.Output) / 1e6
}

// Response is the model's answer: content and tool calls (ID and role are left
// to the caller), plus usage.
type Response struct {
	Content   string
	ToolCalls []message.ToolCall
	Usage     Usage
}

// Model is a chat model. Chat streams text deltas to onDelta (which may be nil)
// as they arrive and returns the complete answer.
type Model interface {
	Chat(ctx context.Context, req Request, onDelta func(text string)) (Response, error)
}
