// Package images makes the images a prompt or a tool gives the model fit to
// send: it reads PNG, JPEG, GIF and WebP, refuses an image whose dimensions
// are too large to decode before decoding it (a decompression bomb: a small
// file that decodes to gigabytes), and scales down and re-encodes one that
// is larger than the model can use or than the size bound.
package images

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	stddraw "image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// Bounds of an image agent-lsp takes.
const (
	// DefaultMaxBytes is the default bound of one stored image (the
	// images.maxBytes setting): about 4 MB once base64 encoded in a
	// request, within what the major providers take per image.
	DefaultMaxBytes = 3 << 20
	// MaxInput bounds the file or data an image is read from.
	MaxInput = 32 << 20
	// MaxSide is the longest side an image is sent with: OpenAI scales
	// larger ones down to it anyway, and others to less.
	MaxSide = 2048
	// MaxPixels bounds the images decoded (width × height, as the header
	// says before anything is decoded): about 160 MB of pixels once decoded.
	MaxPixels = 40_000_000
)

// ErrNotImage: the data is not an image of a format agent-lsp reads.
var ErrNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// Prepare returns data as the image a message stores: unchanged when it is
// a PNG or JPEG within maxBytes and MaxSide, else decoded, scaled to fit
// MaxSide and re-encoded (PNG, or JPEG when that is too large; smaller
// still until it fits maxBytes). name says where it came from, in errors
// and in the message. An image whose header gives more than MaxPixels is
// refused before it is decoded.
func Prepare(data []byte, name string, maxBytes int) (message.ImageData, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(data) > MaxInput {
		return message.ImageData{}, fmt.Errorf("%s is %d bytes, more than the %d an image may have", name, len(data), MaxInput)
	}
	cfg, format, err := decodeConfig(data)
	if err != nil {
		return message.ImageData{}, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return message.ImageData{}, fmt.Errorf("%s is %d×%d pixels, more than the %d megapixels agent-lsp decodes (a decompression bomb?): refused",
			name, cfg.Width, cfg.Height, MaxPixels/1_000_000)
	}
	if (format == "png" || format == "jpeg") && len(data) <= maxBytes && max(cfg.Width, cfg.Height) <= MaxSide {
		return imageData(data, "image/"+format, cfg.Width, cfg.Height, name), nil
	}
	img, err := decode(data, format)
	if err != nil {
		return message.ImageData{}, fmt.Errorf("%s: %w", name, err)
	}
	return shrink(img, name, maxBytes)
}

// decodeConfig reads an image's format and dimensions from its header only.
func decodeConfig(data []byte) (image.Config, string, error) {
	r := bytes.NewReader(data)
	for _, f := range formats {
		if !bytes.HasPrefix(data, f.magic) || (f.name == "webp" && !isWebP(data)) {
			continue
		}
		cfg, err := f.config(r)
		if err != nil {
			return image.Config{}, "", fmt.Errorf("a broken %s image: %w", f.name, err)
		}
		return cfg, f.name, nil
	}
	return image.Config{}, "", ErrNotImage
}

// formats are the formats read, by their first bytes. They are tried here
// rather than registered with package image, so that nothing else in the
// process decodes what this package refuses.
var formats = []struct {
	name   string
	magic  []byte
	config func(r *bytes.Reader) (image.Config, error)
	decode func(r *bytes.Reader) (image.Image, error)
}{
	{"png", []byte("\x89PNG\r\n\x1a\n"), func(r *bytes.Reader) (image.Config, error) { return png.DecodeConfig(r) }, func(r *bytes.Reader) (image.Image, error) { return png.Decode(r) }},
	{"jpeg", []byte("\xff\xd8"), func(r *bytes.Reader) (image.Config, error) { return jpeg.DecodeConfig(r) }, func(r *bytes.Reader) (image.Image, error) { return jpeg.Decode(r) }},
	{"gif", []byte("GIF8"), func(r *bytes.Reader) (image.Config, error) { return gif.DecodeConfig(r) }, func(r *bytes.Reader) (image.Image, error) { return gif.Decode(r) }},
	{"webp", []byte("RIFF"), func(r *bytes.Reader) (image.Config, error) { return webp.DecodeConfig(r) }, func(r *bytes.Reader) (image.Image, error) { return webp.Decode(r) }},
}

func isWebP(data []byte) bool { return len(data) >= 12 && string(data[8:12]) == "WEBP" }

// decode decodes data of a format decodeConfig found (a GIF's first frame).
func decode(data []byte, format string) (image.Image, error) {
	for _, f := range formats {
		if f.name == format {
			img, err := f.decode(bytes.NewReader(data))
			if err != nil {
				return nil, fmt.Errorf("a broken %s image: %w", format, err)
			}
			return img, nil
		}
	}
	return nil, ErrNotImage
}

// shrink scales img to fit MaxSide and encodes it within maxBytes: PNG
// (sharp text, transparency) when that fits, else JPEG, scaled down further
// until it fits.
func shrink(img image.Image, name string, maxBytes int) (message.ImageData, error) {
	b := img.Bounds()
	scale := min(1, float64(MaxSide)/float64(max(b.Dx(), b.Dy())))
	for range 8 {
		w, h := max(1, int(float64(b.Dx())*scale)), max(1, int(float64(b.Dy())*scale))
		small := resize(img, w, h)
		var buf bytes.Buffer
		if err := png.Encode(&buf, small); err != nil {
			return message.ImageData{}, fmt.Errorf("%s: %w", name, err)
		}
		mime := "image/png"
		if buf.Len() > maxBytes {
			buf.Reset()
			if err := jpeg.Encode(&buf, onWhite(small), &jpeg.Options{Quality: 85}); err != nil {
				return message.ImageData{}, fmt.Errorf("%s: %w", name, err)
			}
			mime = "image/jpeg"
		}
		if buf.Len() <= maxBytes {
			return imageData(buf.Bytes(), mime, w, h, name), nil
		}
		scale *= math.Sqrt(float64(maxBytes)/float64(buf.Len())) * 0.9
	}
	return message.ImageData{}, fmt.Errorf("%s cannot be made smaller than %d bytes", name, maxBytes)
}

// resize returns img scaled to w×h: a box filter first halves it while it is
// more than twice as large (cheap in memory, unlike x/image's kernel
// scalers, whose buffer holds w × the source's height in float64s), then
// x/image/draw's bilinear interpolation makes the last step.
func resize(img image.Image, w, h int) image.Image {
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return img
	}
	src := toRGBA(img)
	for src.Bounds().Dx() >= 2*w && src.Bounds().Dy() >= 2*h {
		src = halve(src)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return dst
}

func toRGBA(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok && m.Bounds().Min == (image.Point{}) {
		return m
	}
	b := img.Bounds()
	m := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	stddraw.Draw(m, m.Bounds(), img, b.Min, stddraw.Src)
	return m
}

// halve averages each 2×2 block of src (premultiplied, so transparent
// pixels do not darken their neighbours).
func halve(src *image.RGBA) *image.RGBA {
	w, h := src.Bounds().Dx()/2, src.Bounds().Dy()/2
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		r0 := src.Pix[2*y*src.Stride:]
		r1 := src.Pix[(2*y+1)*src.Stride:]
		d := dst.Pix[y*dst.Stride:]
		for x := range w {
			for c := range 4 {
				i := 8*x + c
				sum := int(r0[i]) + int(r0[i+4]) + int(r1[i]) + int(r1[i+4])
				d[4*x+c] = uint8((sum + 2) / 4)
			}
		}
	}
	return dst
}

// onWhite is img with its transparency flattened onto white, for JPEG.
func onWhite(img image.Image) image.Image {
	if m, ok := img.(*image.RGBA); ok && m.Opaque() {
		return m
	}
	b := img.Bounds()
	m := image.NewRGBA(b)
	stddraw.Draw(m, b, image.NewUniform(color.White), image.Point{}, stddraw.Src)
	stddraw.Draw(m, b, img, b.Min, stddraw.Over)
	return m
}

// imageData is data as stored, named by its bytes.
func imageData(data []byte, mime string, w, h int, name string) message.ImageData {
	sum := sha256.Sum256(data)
	return message.ImageData{Image: message.Image{ID: "img-" + hex.EncodeToString(sum[:16]), MimeType: mime, Width: w, Height: h, Size: len(data), Name: name},
		Data: data}
}
