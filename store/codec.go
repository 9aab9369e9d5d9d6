package store

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Records (values, pending writes and list items' bodies) are compressed
// when that pays: a record of at least minCompress bytes is stored
// compressed when that makes it at least an eighth smaller; others stay
// raw. Records under zstdFrom bytes (most messages) are compressed with S2,
// which costs a fifth of zstd's time on them (about 2.4 against 12 µs for
// 1 KB here, at 0.71 against 0.56 of the size: zstd's fixed cost per frame
// dominates small records and would double a batched step's time); larger
// ones (long tool outputs) with zstd, whose ratio there is worth its cost.
//
// A stored record says what it is by its first byte: a zstd frame starts
// with its magic number, an S2 block follows the byte s2Tag, and raw JSON
// starts with a value or whitespace, never with either. So raw records, and
// every record of a file written before compression, read as they are.
const (
	minCompress = 128
	zstdFrom    = 4 << 10
	s2Tag       = 0x01
)

// maxRecord bounds a record's decompressed size: a damaged or hostile frame
// that claims more is refused instead of taking the memory.
const maxRecord = 256 << 20

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// codec compresses and decompresses records. Its encoder and decoder are
// safe for concurrent EncodeAll and DecodeAll calls; it is built once per
// process, on first use.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

var records = sync.OnceValue(func() *codec {
	// SpeedFastest: a step's commit is on the run's path; the ratio on
	// messages is within a few percent of the default level.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err)) // only for invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxRecord), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("zstd decoder: %v", err))
	}
	return &codec{enc: enc, dec: dec}
})

// pack returns v as stored: compressed when that pays, else v itself.
func (c *codec) pack(v []byte) []byte {
	if len(v) < minCompress || bytes.HasPrefix(v, zstdMagic) || v[0] == s2Tag {
		return v
	}
	var z []byte
	if len(v) >= zstdFrom {
		z = c.enc.EncodeAll(v, make([]byte, 0, len(v)/2))
	} else {
		z = append([]byte{s2Tag}, s2.Encode(make([]byte, s2.MaxEncodedLen(len(v))), v)...)
	}
	if len(z) > len(v)-len(v)/8 {
		return v
	}
	return z
}

// unpack returns a stored record's bytes: decompressed when it is a zstd
// frame or an S2 block, else a copy of v (bbolt's memory is valid only in
// its transaction).
func (c *codec) unpack(v []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(v, zstdMagic):
		out, err := c.dec.DecodeAll(v, nil)
		if err != nil {
			return nil, fmt.Errorf("corrupt compressed record: %w", err)
		}
		return out, nil
	case len(v) > 0 && v[0] == s2Tag:
		n, err := s2.DecodedLen(v[1:])
		if err != nil || n > maxRecord {
			return nil, fmt.Errorf("corrupt compressed record: %d bytes claimed, %v", n, err)
		}
		out, err := s2.Decode(make([]byte, n), v[1:])
		if err != nil {
			return nil, fmt.Errorf("corrupt compressed record: %w", err)
		}
		return out, nil
	}
	return bytes.Clone(v), nil
}

// PackRecord returns a record's bytes as a store keeps them: compressed
// when that pays (S2 or zstd), else the record itself. Every backend
// stores records this way, so that they read back the same everywhere.
func PackRecord(v []byte) []byte { return records().pack(v) }

// UnpackRecord returns the record a PackRecord result holds; a damaged
// compressed record is an error.
func UnpackRecord(v []byte) ([]byte, error) { return records().unpack(v) }
