package server

import (
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// lspCodec encodes the payloads of the connection (request params, results,
// notifications) with go.lsp.dev/protocol's union-aware codec (Marshal and
// Unmarshal), as the library's own connections do (protocol.NewServer
// installs its unexported lspCodec, but this server keeps its own handler
// chain: NOTES, "go.lsp.dev v1"). Already-encoded payloads pass verbatim.
//
// The library's codec passes only jsonrpc2.RawMessage verbatim: an
// encoding/json.RawMessage (what the agent/event notifications are) goes
// through protocol.Marshal, which validates and re-encodes it, although
// jsonrpc2.Codec's contract says both kinds pass verbatim
// (TestCodecPassesRawMessagesVerbatim shows it). This codec passes both.
type lspCodec struct{}

var _ jsonrpc2.Codec = lspCodec{}

// Marshal implements jsonrpc2.Codec.
func (lspCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		return rawOrNull(m), nil
	case json.RawMessage:
		return rawOrNull(m), nil
	}
	return protocol.Marshal(v)
}

func rawOrNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// Unmarshal implements jsonrpc2.Codec: a raw destination gets a copy of
// data, anything else is decoded by protocol.Unmarshal.
func (lspCodec) Unmarshal(data []byte, v any) error {
	switch p := v.(type) {
	case *jsonrpc2.RawMessage:
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	case *json.RawMessage:
		*p = append(json.RawMessage(nil), data...)
		return nil
	}
	return protocol.Unmarshal(data, v)
}
