package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// Place.Sum, which feeds crc32 without building the place's bytes, is the
// CRC32C of uvarint(len(bucket)) bucket uvarint(len(key)) key part payload,
// whether the bucket's part is computed or given (In).
func TestPlaceSum(t *testing.T) {
	at := Place{Bucket: bytes.Repeat([]byte("b"), 200), Key: []byte("key"), Part: 1}
	payload := []byte("payload")
	var in []byte
	in = binary.AppendUvarint(in, uint64(len(at.Bucket)))
	in = append(in, at.Bucket...)
	in = binary.AppendUvarint(in, uint64(len(at.Key)))
	in = append(append(append(in, at.Key...), at.Part), payload...)
	want := crc32.Checksum(in, Castagnoli)
	if got := at.Sum(payload); got != want {
		t.Fatalf("sum %08x, want %08x", got, want)
	}
	pre := In(at.Bucket, BucketSum(at.Bucket), at.Key)
	pre.Part = at.Part
	if got := pre.Sum(payload); got != want {
		t.Fatalf("sum from the bucket's %08x, want %08x", got, want)
	}
}

// A sealed record opens at its place only: another key, bucket or part,
// or one flipped bit anywhere, is damage; a file of an earlier format
// (not strict) reads its records as they are.
func TestSealedRecordOpensAtItsPlaceOnly(t *testing.T) {
	at := Place{Bucket: []byte("bucket"), Key: []byte("key")}
	v := PackAt(at, []byte(`{"content":"greet.go"}`))
	if got, err := UnpackAt(at, v, true); err != nil || string(got) != `{"content":"greet.go"}` {
		t.Fatalf("unpack: %q %v", got, err)
	}
	for _, other := range []Place{{Bucket: []byte("bucket"), Key: []byte("kez")}, {Bucket: []byte("bucket2"), Key: []byte("key")}, {Bucket: []byte("bucket"), Key: []byte("key"), Part: 1}} {
		if _, err := UnpackAt(other, v, true); !errors.Is(err, ErrDamaged) {
			t.Errorf("opened at %q/%q/%d: %v", other.Bucket, other.Key, other.Part, err)
		}
	}
	for bit := 0; bit < len(v)*8; bit++ {
		d := bytes.Clone(v)
		d[bit/8] ^= 1 << (bit % 8)
		if got, err := UnpackAt(at, d, true); err == nil {
			t.Fatalf("bit %d flipped reads as %q", bit, got)
		}
	}
	if got, err := UnpackAt(at, []byte(`"raw"`), false); err != nil || string(got) != `"raw"` {
		t.Fatalf("a record of an earlier format: %q %v", got, err)
	}
	if _, err := UnpackAt(at, []byte(`"raw"`), true); !errors.Is(err, ErrDamaged) {
		t.Fatalf("an unsealed record where all are sealed: %v", err)
	}
}
