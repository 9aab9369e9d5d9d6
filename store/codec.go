package store

import "github.com/agent-lsp/agent-lsp/store/internal/record"

// PackRecord returns a record's bytes as a store keeps them: compressed
// when that pays (S2 or zstd), and sealed with a CRC32C. Every backend
// stores records this way, so that they read back the same everywhere.
func PackRecord(v []byte) []byte { return record.Pack(v) }

// UnpackRecord returns the record a PackRecord result holds: a damaged one
// (its checksum fails, or it does not decompress) is an error wrapping
// ErrDamaged, never data. A record stored before records were sealed is
// read as it is.
func UnpackRecord(v []byte) ([]byte, error) { return record.Unpack(v) }
