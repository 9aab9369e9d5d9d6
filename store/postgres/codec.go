package postgres

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Bodies (values, pending writes, list items) are stored as the bbolt store
// stores them (store/codec.go): a zstd frame when the JSON is at least
// minCompress bytes and the frame is at least an eighth smaller, else the
// JSON itself. A zstd frame starts with its magic number, which no JSON text
// does, so both read back without a flag.
const minCompress = 128

// maxRecord bounds a body's decompressed size.
const maxRecord = 256 << 20

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

var records = sync.OnceValue(func() *codec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxRecord), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("zstd decoder: %v", err))
	}
	return &codec{enc: enc, dec: dec}
})

// pack returns v as stored: compressed when that pays, else v itself.
func pack(v []byte) []byte {
	if len(v) < minCompress || bytes.HasPrefix(v, zstdMagic) {
		return v
	}
	z := records().enc.EncodeAll(v, make([]byte, 0, len(v)/2))
	if len(z) > len(v)-len(v)/8 {
		return v
	}
	return z
}

// unpack returns a stored body's JSON.
func unpack(v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, zstdMagic) {
		return v, nil
	}
	out, err := records().dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("corrupt compressed record: %w", err)
	}
	return out, nil
}
