// Package record is how the store keeps one record: compressed when that
// pays (S2 or zstd), and sealed with a CRC32C of its bytes and of its
// place, so that damage to it, its key or its bucket's name is found when
// it is read. Every backend stores records this way (the bbolt file and
// PostgreSQL), so that they read back the same everywhere.
package record

import (
	"bytes"
	"encoding/binary"
	"errors"
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
// with its magic number, an S2 block follows the byte S2Tag, and raw JSON
// starts with a value or whitespace, never with either. So raw records, and
// every record of a file written before compression, read as they are.
const (
	minCompress = 128
	zstdFrom    = 4 << 10
	S2Tag       = 0x01
)

// ErrDamaged is wrapped by the error of a record whose seal fails or that
// cannot be decoded: damage, never data.
var ErrDamaged = errors.New("damaged record")

// maxRecord bounds a record's decompressed size: a damaged or hostile frame
// that claims more is refused instead of taking the memory.
const maxRecord = 256 << 20

// ZstdMagic starts a zstd frame.
var ZstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

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
	if len(v) < minCompress || bytes.HasPrefix(v, ZstdMagic) || v[0] == S2Tag {
		return v
	}
	var z []byte
	if len(v) >= zstdFrom {
		z = c.enc.EncodeAll(v, make([]byte, 0, len(v)/2))
	} else {
		z = append([]byte{S2Tag}, s2.Encode(make([]byte, s2.MaxEncodedLen(len(v))), v)...)
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
	case bytes.HasPrefix(v, ZstdMagic):
		out, err := c.dec.DecodeAll(v, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: corrupt compressed record: %v", ErrDamaged, err)
		}
		return out, nil
	case len(v) > 0 && v[0] == S2Tag:
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

// Every record a store of format 4 keeps is sealed: SealTag, the CRC32C
// (Castagnoli, little-endian) of its place and its payload, then the
// payload (the record compressed or raw, as Compress returns it). The place
// names where the record is kept (in a bbolt file its bucket and key), so
// a record whose key or bucket name was damaged fails its check as one
// whose bytes were. No record of an earlier format starts with SealTag:
// raw JSON starts with a value or whitespace, a compressed record with S2Tag
// or zstd's magic number.
const (
	SealTag  = 0x02
	SealSize = 5
)

// Castagnoli is CRC32C's table.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Place is where a record is kept: a bucket, a key in it, and which part of
// the record under that key (the head record holds two).
type Place struct {
	Bucket, Key []byte
	Part        byte
	// pre, when set, is BucketSum(Bucket): computed once by a reader of
	// many records of one bucket (In).
	pre    uint32
	hasPre bool
}

// BucketSum is the CRC32C of a place's bucket, the first part of its sum:
// uvarint(len(bucket)) bucket.
func BucketSum(bucket []byte) uint32 {
	return crc32.Update(crcUvarint(0, uint64(len(bucket))), Castagnoli, bucket)
}

// In returns the place of key (part 0) in the bucket whose BucketSum is
// pre.
func In(bucket []byte, pre uint32, key []byte) Place {
	return Place{Bucket: bucket, Key: key, pre: pre, hasPre: true}
}

// Sum returns the CRC32C of the place and payload: uvarint(len(bucket))
// bucket uvarint(len(key)) key part payload.
func (p Place) Sum(payload []byte) uint32 {
	crc := p.pre
	if !p.hasPre {
		crc = BucketSum(p.Bucket)
	}
	crc = crcUvarint(crc, uint64(len(p.Key)))
	crc = crc32.Update(crc, Castagnoli, p.Key)
	crc = crcByte(crc, p.Part)
	return crc32.Update(crc, Castagnoli, payload)
}

// crcByte is crc32.Update of one byte, without a slice to allocate.
func crcByte(crc uint32, b byte) uint32 {
	c := ^crc
	return ^(Castagnoli[byte(c)^b] ^ (c >> 8))
}

// crcUvarint is crc32.Update of v's uvarint encoding.
func crcUvarint(crc uint32, v uint64) uint32 {
	for ; v >= 0x80; v >>= 7 {
		crc = crcByte(crc, byte(v)|0x80)
	}
	return crcByte(crc, byte(v))
}

// Seal returns payload sealed place at.
func Seal(at Place, payload []byte) []byte {
	out := make([]byte, SealSize, SealSize+len(payload))
	out[0] = SealTag
	binary.LittleEndian.PutUint32(out[1:], at.Sum(payload))
	return append(out, payload...)
}

// Unseal returns the payload of a record stored place at, after checking
// its seal. strict says the record's file seals every record (format 4 and
// later): one without a seal is damage. Otherwise the file is of an earlier
// format, which sealed none, and v is its payload as it is (its first byte
// may be anything: a list item's starts with the length of its ID). The
// payload refers to v.
func Unseal(at Place, v []byte, strict bool) ([]byte, error) {
	if !strict {
		return v, nil
	}
	if len(v) == 0 || v[0] != SealTag {
		return nil, fmt.Errorf("%w: the record has no checksum", ErrDamaged)
	}
	if len(v) < SealSize {
		return nil, fmt.Errorf("%w: the record is cut short", ErrDamaged)
	}
	payload := v[SealSize:]
	if binary.LittleEndian.Uint32(v[1:]) != at.Sum(payload) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrDamaged)
	}
	return payload, nil
}

// SealAs returns payload as a file whose records are sealed when strict
// keeps it: sealed place at, or as it is.
func SealAs(strict bool, at Place, payload []byte) []byte {
	if !strict {
		return payload
	}
	return Seal(at, payload)
}

// PackAs is PackAt for a file whose records are sealed when strict.
func PackAs(strict bool, at Place, v []byte) []byte {
	return SealAs(strict, at, Compress(v))
}

// PackAt returns v as stored place at: compressed when that pays, and
// sealed.
func PackAt(at Place, v []byte) []byte { return Seal(at, Compress(v)) }

// UnpackAt returns the record a PackAt result stored place at holds;
// strict refuses a record without a seal.
func UnpackAt(at Place, v []byte, strict bool) ([]byte, error) {
	payload, err := Unseal(at, v, strict)
	if err != nil {
		return nil, err
	}
	return Decompress(payload)
}

// Pack returns v as a record kept where no place is named: compressed when
// that pays, and sealed. Every kind of record goes through it or PackAt.
func Pack(v []byte) []byte { return PackAt(Place{}, v) }

// Unpack returns the record a Pack result holds, or a record stored before
// records were sealed (raw JSON, or compressed: never starting with
// SealTag) as it is; damage is an error wrapping ErrDamaged.
func Unpack(v []byte) ([]byte, error) {
	return UnpackAt(Place{}, v, len(v) > 0 && v[0] == SealTag)
}

// Compress returns v as stored: compressed when that pays, else v itself.
func Compress(v []byte) []byte { return records().compress(v) }

// Decompress returns a stored record's bytes: decompressed when it is a
// zstd frame or an S2 block, else a copy of v. A damaged compressed record
// is an error wrapping ErrDamaged.
func Decompress(v []byte) ([]byte, error) { return records().decompress(v) }
