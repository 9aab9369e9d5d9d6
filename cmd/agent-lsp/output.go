package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The structured output of a run (--output-schema) and where the final
// answer goes (-o/--output).

// outputSchema is the JSON Schema the final answer must be valid against.
type outputSchema struct {
	raw      json.RawMessage // as the file has it: sent to the server
	resolved *jsonschema.Resolved
}

// loadSchema reads and resolves the JSON Schema in path.
func loadSchema(path string) (*outputSchema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--output-schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("--output-schema %s: not a JSON Schema: %w", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("--output-schema %s: %w", path, err)
	}
	var compact strings.Builder
	enc := json.NewEncoder(&compact)
	var v any
	json.Unmarshal(b, &v)
	enc.Encode(v)
	return &outputSchema{raw: json.RawMessage(strings.TrimSpace(compact.String())), resolved: rs}, nil
}

// instructions is what the prompt adds: the answer's shape.
func (o *outputSchema) instructions() string {
	return "\n\nWhen you are done, give your final answer as one JSON value valid against this JSON Schema, and nothing else (no prose, no code fence):\n" + string(o.raw)
}

// check parses the final answer as JSON (a fenced block is taken out of
// its fence) and validates it; the error lists what is wrong.
func (o *outputSchema) check(reply string) (any, error) {
	text := strings.TrimSpace(reply)
	if strings.HasPrefix(text, "```") {
		text = strings.TrimPrefix(text[strings.IndexByte(text+"\n", '\n'):], "\n")
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), "```"))
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := o.resolved.Validate(v); err != nil {
		return nil, fmt.Errorf("the answer is not valid against the schema: %v", err)
	}
	return v, nil
}

// correction is the prompt that sends an invalid answer back once.
func (o *outputSchema) correction(err error) string {
	return fmt.Sprintf("Your final answer is not what was asked: %v. Answer again with only one JSON value valid against this JSON Schema:\n%s", err, o.raw)
}

// writeAtomic writes data to path through a temporary file in its folder,
// synced and renamed over it: a reader sees the old file or the new one.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a rename there is nothing left to remove
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
