package model

import (
	"net"
	"net/url"
	"syscall"
	"testing"
)

func TestRedact(t *testing.T) {
	const key = "sk-proj-0123456789"
	tests := []struct{ name, s, key, want string }{
		{"whole token", "Incorrect API key provided: " + key + ".", key, "Incorrect API key provided: [redacted]."},
		{"quoted, twice", `"` + key + `" and (` + key + `)`, key, `"[redacted]" and ([redacted])`},
		{"at the ends", key + " " + key, key, "[redacted] [redacted]"},
		{"inside a longer token", "x" + key + " " + key + "_2 " + key + "-x", key, "x" + key + " " + key + "_2 " + key + "-x"},
		{"a later whole one after a partial", key + "9 " + key, key, key + "9 [redacted]"},
		// The demo's key, a word, is never redacted: "scripted model" stays readable.
		{"short key", "no conversation of the scripted model", "scripted", "no conversation of the scripted model"},
		{"11 bytes", "key abcdefghijk", "abcdefghijk", "key abcdefghijk"},
		{"12 bytes", "key abcdefghijkl", "abcdefghijkl", "key [redacted]"},
		{"no key", "text", "", "text"},
	}
	for _, tt := range tests {
		if got := Redact(tt.s, tt.key); got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tt.name, tt.s, got, tt.want)
		}
	}
}

// TestNoSuchHostIsNotRetried: a host name that does not resolve fails at
// once; a dropped connection is still retried.
func TestNoSuchHostIsNotRetried(t *testing.T) {
	nx := &url.Error{Op: "Post", URL: "https://api.example.invalid/v1", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}}
	if _, retry := retryable(nx); retry {
		t.Error("no such host is retried")
	}
	reset := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	if _, retry := retryable(reset); !retry {
		t.Error("a reset connection is not retried")
	}
}
