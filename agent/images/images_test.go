package images

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A small PNG is stored as it came, named by its bytes.
func TestSmallImageIsKept(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	img.Set(3, 4, color.RGBA{255, 0, 0, 255})
	data := encodePNG(t, img)
	got, err := Prepare(data, "shot.png", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data, data) || got.MimeType != "image/png" || got.Width != 40 || got.Height != 30 || got.Size != len(data) || got.Name != "shot.png" {
		t.Errorf("got %+v", got.Image)
	}
	again, _ := Prepare(data, "other.png", 0)
	if again.ID != got.ID || !strings.HasPrefix(got.ID, "img-") || len(got.ID) != 36 {
		t.Errorf("IDs %q and %q: the same bytes must have the same ID", got.ID, again.ID)
	}
}

// A decompression bomb (testdata/hostile/bomb.png: 48 KB that decode to
// 400 MB) is refused by the dimensions its header gives, before anything
// is decoded.
func TestDecompressionBombIsRefusedBeforeDecoding(t *testing.T) {
	data, err := os.ReadFile("../../testdata/hostile/bomb.png")
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Prepare(data, "bomb.png", 0)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "bomb.png is 20000×20000 pixels, more than the 40 megapixels") {
		t.Fatalf("err = %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("refusing the bomb allocated %d bytes: it was decoded", grew)
	}
}

// A huge image (testdata/hostile/huge-image.png, 6000×5000) is scaled to
// fit 2048 pixels and the size bound.
func TestHugeImageIsScaledDown(t *testing.T) {
	data, err := os.ReadFile("../../testdata/hostile/huge-image.png")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Prepare(data, "huge-image.png", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Width != 2048 || got.Height != 1706 || got.Size > DefaultMaxBytes || got.Size != len(got.Data) {
		t.Errorf("got %+v", got.Image)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(got.Data))
	if err != nil || cfg.Width != got.Width || cfg.Height != got.Height {
		t.Errorf("the stored bytes are %+v (%v), the message says %dx%d", cfg, err, got.Width, got.Height)
	}
}

// Noise does not compress: a PNG over the bound becomes a JPEG within it,
// scaled down further under a small bound.
func TestLargeNoiseBecomesJPEG(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 800, 600))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.UintN(256))
	}
	data := encodePNG(t, img)
	got, err := Prepare(data, "noise.png", 400<<10)
	if err != nil {
		t.Fatal(err)
	}
	if got.MimeType != "image/jpeg" || got.Size > 400<<10 || got.Width != 800 {
		t.Errorf("got %+v from %d bytes", got.Image, len(data))
	}
	small, err := Prepare(data, "noise.png", 30<<10)
	if err != nil {
		t.Fatal(err)
	}
	if small.Size > 30<<10 || small.MimeType != "image/jpeg" || small.Width >= 800 || abs(small.Width*600-small.Height*800) > 800 { // the aspect kept, to a pixel
		t.Errorf("under a 30 KB bound: %+v", small.Image)
	}
}

// WebP and GIF images are decoded (WebP by golang.org/x/image) and sent as PNG.
func TestWebPAndGIFBecomePNG(t *testing.T) {
	webp, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	var g bytes.Buffer
	pal := image.NewPaletted(image.Rect(0, 0, 10, 5), color.Palette{color.Black, color.White})
	if err := gif.Encode(&g, pal, nil); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"a.webp": webp, "a.gif": g.Bytes()} {
		got, err := Prepare(data, name, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.MimeType != "image/png" || got.Width == 0 {
			t.Errorf("%s: %+v", name, got.Image)
		}
		if _, err := png.Decode(bytes.NewReader(got.Data)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// What is not an image, or is a broken one, is a clear error.
func TestNotAnImage(t *testing.T) {
	if _, err := Prepare([]byte("hello, world"), "notes.txt", 0); !errors.Is(err, ErrNotImage) || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("text: %v", err)
	}
	if _, err := Prepare([]byte("\x89PNG\r\n\x1a\n"), "cut.png", 0); err == nil || !strings.Contains(err.Error(), "cut.png: a broken png image") {
		t.Errorf("a cut PNG: %v", err)
	}
	if _, err := Prepare(make([]byte, MaxInput+1), "big.bin", 0); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too many bytes: %v", err)
	}
}

func abs(n int) int { return max(n, -n) }
