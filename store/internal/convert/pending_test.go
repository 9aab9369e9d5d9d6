package convert

import (
	"encoding/json"
	"testing"
)

// A pending write of a binary before 0.2 is rewritten in the graph's
// current encoding, op by op; a current one is kept byte for byte; an
// unknown op code is an error; what is not a list of writes is not the
// converter's to judge and is kept.
func TestRewritePending(t *testing.T) {
	tests := []struct{ in, want string }{
		{`[{"c":"note","o":1,"v":"kept"}]`, `[{"c":"note","w":"kept"}]`},
		{`[{"c":"messages","o":2,"i":[{"id":"a"},{"id":"b"}]}]`, `[{"c":"messages","w":{"append":[{"id":"a"},{"id":"b"}]}}]`},
		{`[{"c":"log","o":3}]`, `[{"c":"log","w":{"reset":true}}]`},
		{`[{"c":"messages","o":4}]`, `[{"c":"messages","w":{"replace":[]}}]`},
		{`[{"c":"messages","o":5,"ids":["a"]}]`, `[{"c":"messages","w":{"remove":["a"]}}]`},
		{`[{"c":"messages","w":{"append":[]}},{"c":"note","o":1,"v":"x"}]`, `[{"c":"messages","w":{"append":[]}},{"c":"note","w":"x"}]`},
		{`[{"c":"messages", "w":{"append":[]}}]`, `[{"c":"messages", "w":{"append":[]}}]`},
		{`{"not":"a list"}`, `{"not":"a list"}`},
	}
	for _, tt := range tests {
		got, err := rewritePending([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("rewritePending(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("rewritePending(%s) is not JSON", tt.in)
		}
	}
	if _, err := rewritePending([]byte(`[{"c":"x","o":9}]`)); err == nil {
		t.Error("an unknown op code was rewritten")
	}
}
