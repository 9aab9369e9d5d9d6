package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
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

// compress returns v as stored: compressed when that pays, else v itself.
func (c *codec) compress(v []byte) []byte {
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

// decompress returns a stored record's bytes: decompressed when it is a
// zstd frame or an S2 block, else a copy of v (bbolt's memory is valid only
// in its transaction).
func (c *codec) decompress(v []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(v, zstdMagic):
		out, err := c.dec.DecodeAll(v, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: corrupt compressed record: %v", ErrDamaged, err)
		}
		return out, nil
	case len(v) > 0 && v[0] == s2Tag:
		n, err := s2.DecodedLen(v[1:])
		if err != nil || n > maxRecord {
			return nil, fmt.Errorf("%w: corrupt compressed record: %d bytes claimed, %v", ErrDamaged, n, err)
		}
		out, err := s2.Decode(make([]byte, n), v[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: corrupt compressed record: %v", ErrDamaged, err)
		}
		return out, nil
	}
	return bytes.Clone(v), nil
}

// Every record a store of format 4 keeps is sealed: sealTag, the CRC32C
// (Castagnoli, little-endian) of its place and its payload, then the
// payload (the record compressed or raw, as compress returns it). The place
// names where the record is kept (in a bbolt file its bucket and key), so
// a record whose key or bucket name was damaged fails its check as one
// whose bytes were. No record of an earlier format starts with sealTag:
// raw JSON starts with a value or whitespace, a compressed record with s2Tag
// or zstd's magic number.
const (
	sealTag  = 0x02
	sealSize = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// place is where a record is kept: a bucket, a key in it, and which part of
// the record under that key (the head record holds two).
type place struct {
	bucket, key []byte
	part        byte
	// pre, when set, is bucketSum(bucket): computed once by a reader of
	// many records of one bucket.
	pre    uint32
	hasPre bool
}

// bucketSum is the CRC32C of a place's bucket, the first part of its sum:
// uvarint(len(bucket)) bucket.
func bucketSum(bucket []byte) uint32 {
	return crc32.Update(crcUvarint(0, uint64(len(bucket))), castagnoli, bucket)
}

// in returns the place of key (part 0) in the bucket whose bucketSum is pre.
func in(bucket []byte, pre uint32, key []byte) place {
	return place{bucket: bucket, key: key, pre: pre, hasPre: true}
}

// sum returns the CRC32C of the place and payload: uvarint(len(bucket))
// bucket uvarint(len(key)) key part payload.
func (p place) sum(payload []byte) uint32 {
	crc := p.pre
	if !p.hasPre {
		crc = bucketSum(p.bucket)
	}
	crc = crcUvarint(crc, uint64(len(p.key)))
	crc = crc32.Update(crc, castagnoli, p.key)
	crc = crcByte(crc, p.part)
	return crc32.Update(crc, castagnoli, payload)
}

// crcByte is crc32.Update of one byte, without a slice to allocate.
func crcByte(crc uint32, b byte) uint32 {
	c := ^crc
	return ^(castagnoli[byte(c)^b] ^ (c >> 8))
}

// crcUvarint is crc32.Update of v's uvarint encoding.
func crcUvarint(crc uint32, v uint64) uint32 {
	for ; v >= 0x80; v >>= 7 {
		crc = crcByte(crc, byte(v)|0x80)
	}
	return crcByte(crc, byte(v))
}

// seal returns payload sealed at place at.
func seal(at place, payload []byte) []byte {
	out := make([]byte, sealSize, sealSize+len(payload))
	out[0] = sealTag
	binary.LittleEndian.PutUint32(out[1:], at.sum(payload))
	return append(out, payload...)
}

// unseal returns the payload of a record stored at place at, after checking
// its seal. strict says the record's file seals every record (format 4 and
// later): one without a seal is damage. Otherwise the file is of an earlier
// format, which sealed none, and v is its payload as it is (its first byte
// may be anything: a list item's starts with the length of its ID). The
// payload refers to v.
func unseal(at place, v []byte, strict bool) ([]byte, error) {
	if !strict {
		return v, nil
	}
	if len(v) == 0 || v[0] != sealTag {
		return nil, fmt.Errorf("%w: the record has no checksum", ErrDamaged)
	}
	if len(v) < sealSize {
		return nil, fmt.Errorf("%w: the record is cut short", ErrDamaged)
	}
	payload := v[sealSize:]
	if binary.LittleEndian.Uint32(v[1:]) != at.sum(payload) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrDamaged)
	}
	return payload, nil
}

// sealAs returns payload as a file whose records are sealed when strict
// keeps it: sealed at place at, or as it is.
func sealAs(strict bool, at place, payload []byte) []byte {
	if !strict {
		return payload
	}
	return seal(at, payload)
}

// packAs is packAt for a file whose records are sealed when strict.
func (c *codec) packAs(strict bool, at place, v []byte) []byte {
	return sealAs(strict, at, c.compress(v))
}

// packAt returns v as stored at place at: compressed when that pays, and
// sealed.
func (c *codec) packAt(at place, v []byte) []byte { return seal(at, c.compress(v)) }

// unpackAt returns the record a packAt result stored at place at holds;
// strict refuses a record without a seal.
func (c *codec) unpackAt(at place, v []byte, strict bool) ([]byte, error) {
	payload, err := unseal(at, v, strict)
	if err != nil {
		return nil, err
	}
	return c.decompress(payload)
}

// pack returns v as a record kept where no place is named: compressed when
// that pays, and sealed. Every kind of record goes through it or packAt.
func (c *codec) pack(v []byte) []byte { return c.packAt(place{}, v) }

// unpack returns the record a pack result holds, or a record stored before
// records were sealed (raw JSON, or compressed: never starting with
// sealTag) as it is; damage is an error wrapping ErrDamaged.
func (c *codec) unpack(v []byte) ([]byte, error) {
	return c.unpackAt(place{}, v, len(v) > 0 && v[0] == sealTag)
}

// PackRecord returns a record's bytes as a store keeps them: compressed
// when that pays (S2 or zstd), and sealed with a CRC32C. Every backend
// stores records this way, so that they read back the same everywhere.
func PackRecord(v []byte) []byte { return records().pack(v) }

// UnpackRecord returns the record a PackRecord result holds: a damaged one
// (its checksum fails, or it does not decompress) is an error wrapping
// ErrDamaged, never data. A record stored before records were sealed is
// read as it is.
func UnpackRecord(v []byte) ([]byte, error) { return records().unpack(v) }
