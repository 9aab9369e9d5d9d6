package store

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Records (values, pending writes and list items' bodies) are compressed
// with zstd when that pays: a record of at least minCompress bytes is
// stored as a zstd frame when the frame is at least an eighth smaller;
// others stay raw. A zstd frame starts with its magic number, which no JSON
// text does (JSON starts with a value or whitespace), so a raw record, and
// every record of a file written before compression, reads as it is.
const minCompress = 128

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
	if len(v) < minCompress || bytes.HasPrefix(v, zstdMagic) {
		return v
	}
	z := c.enc.EncodeAll(v, make([]byte, 0, len(v)/2))
	if len(z) > len(v)-len(v)/8 {
		return v
	}
	return z
}

// unpack returns a stored record's bytes: decompressed when it is a zstd
// frame, else a copy of v (bbolt's memory is valid only in its
// transaction).
func (c *codec) unpack(v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, zstdMagic) {
		return bytes.Clone(v), nil
	}
	out, err := c.dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("corrupt compressed record: %w", err)
	}
	return out, nil
}
