package transcript

import "testing"

func TestTarget(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"path":"greet.go"}`, "greet.go"},
		{`{"start_line":3,"path":"a/b.go","end_line":9}`, "a/b.go"},
		{`{"command":"go test ./...","path":""}`, "go test ./..."},
		{`{"path":7,"pattern":"func [A-Z]"}`, "func [A-Z]"}, // a path of another type is skipped
		{`{"project":"web"}`, "web"},
		{`{"task":"one two three four five six seven eight nine ten"}`, FirstWords("one two three four five six seven eight nine ten", 8)},
		{`{"other":"x"}`, ""},
		{`not json`, ""},
		{`[1,2]`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := Target(tt.args); got != tt.want {
			t.Errorf("Target(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
