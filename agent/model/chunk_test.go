package model

import (
	"os"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// realChunks are chunks as providers send them: OpenAI's (with logprobs,
// system_fingerprint, usage null and in the last chunk), Ollama's, vLLM's,
// llama.cpp's, and the scripted model's.
var realChunks = []string{
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":"Hello, \"world\"\n\tline\u00e9 \ud83d\ude00"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"read_file","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"gr"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-AZ1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1234,"completion_tokens":56,"total_tokens":1290,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
	`{"id":"chatcmpl-42","object":"chat.completion.chunk","created":1731000000,"model":"qwen2.5-coder:7b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","index":0,"type":"function","function":{"name":"list_files","arguments":"{\"path\":\".\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chat-9f","object":"chat.completion.chunk","created":1731000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":10,"total_tokens":12,"completion_tokens":2}}`,
	`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"x"}}],"created":1731000000,"id":"chatcmpl-l","model":"llama","system_fingerprint":"b4000","object":"chat.completion.chunk","timings":{"prompt_n":1,"prompt_ms":0.5,"predicted_per_second":-1.5e3}}`,
	`{"id":"scripted","object":"chat.completion.chunk","created":0,"model":"scripted","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1_0","type":"function","function":{"name":"read_file"}}]},"finish_reason":""}]}`,
	`{"choices":[{"delta":{"content":"a"}}]}`,
	// OpenAI's current chunks (with include_usage): nine keys.
	`{"id":"chatcmpl-C1","object":"chat.completion.chunk","created":1761000000,"model":"gpt-5-mini-2025-08-07","service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Xy3k"}`,
}

// oddChunks are chunks outside the common shape (testdata/hostile): keys in
// another case, escaped or repeated, values of other types, numbers with
// fractions or out of range, a lone surrogate, invalid UTF-8, deep nesting,
// cut or trailing bytes. The full decoder takes them.
var oddChunks = func() []string {
	b, err := os.ReadFile("../../testdata/hostile/odd-chunks.txt")
	if err != nil {
		panic(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}()

// full is the reference: encoding/json's semantics by the v2 engine.
func full(data []byte) (chunk, error) {
	var c chunk
	err := jsonv2.Unmarshal(data, &c, jsonv1.DefaultOptionsV1())
	return c, err
}

// checkChunk fails when decodeChunk takes data but decodes it otherwise
// than the full decoder, and reports whether it took it.
func checkChunk(t *testing.T, data []byte) bool {
	t.Helper()
	var got chunk
	if !decodeChunk(data, &got) {
		return false
	}
	want, err := full(data)
	if err != nil {
		t.Fatalf("decodeChunk took %q, which the full decoder refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeChunk(%q) =\n%#v\nthe full decoder:\n%#v", data, got, want)
	}
	return true
}

func TestDecodeChunk(t *testing.T) {
	for _, c := range realChunks {
		if !checkChunk(t, []byte(c)) {
			t.Errorf("decodeChunk left a provider's chunk to the full decoder: %s", c)
		}
	}
	for _, c := range oddChunks {
		checkChunk(t, []byte(c))
	}
	// The odd chunks that have a meaning keep it (through the full decoder).
	c, err := decodeChunkOrFull([]byte(`{"Choices":[{"delta":{"content":"case"}}]}`))
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Delta.Content != "case" {
		t.Errorf("a key in another case: %+v, %v", c, err)
	}
	if _, err := decodeChunkOrFull([]byte(`{"choices":[`)); err == nil {
		t.Error("a cut chunk decoded without an error")
	}
}

// FuzzDecodeChunk checks decodeChunk against the full decoder.
func FuzzDecodeChunk(f *testing.F) {
	for _, c := range append(realChunks, oddChunks...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data) })
}

// BenchmarkDecodeChunk decodes the chunks of one tool turn as OpenAI sends
// them, by decodeChunk and by the full decoder.
func BenchmarkDecodeChunk(b *testing.B) {
	turn := [][]byte{[]byte(realChunks[0]), []byte(realChunks[2]), []byte(realChunks[3]), []byte(realChunks[3]), []byte(realChunks[3]), []byte(realChunks[4]), []byte(realChunks[5])}
	for _, d := range []struct {
		name   string
		decode func([]byte) (chunk, error)
	}{{"common", decodeChunkOrFull}, {"full", full}} {
		b.Run(d.name, func(b *testing.B) {
			for b.Loop() {
				for _, data := range turn {
					if _, err := d.decode(data); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(turn)), "ns/chunk")
		})
	}
}
