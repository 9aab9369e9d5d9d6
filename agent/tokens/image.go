package tokens

// Image returns the tokens an image of width×height pixels costs a model,
// by OpenAI's tile formula for detail "high" (what "auto" picks for all but
// small images): the image is scaled to fit 2048×2048, then its shorter side
// to at most 768; each 512-pixel tile of the result costs 170 tokens, plus
// 85 for the image. Other providers count images differently (Anthropic
// about width×height/750); the usage a provider reports corrects the
// estimate, as for text.
func Image(width, height int) int {
	if width <= 0 || height <= 0 {
		return imageBase
	}
	w, h := float64(width), float64(height)
	if m := max(w, h); m > 2048 {
		w, h = w*2048/m, h*2048/m
	}
	if s := min(w, h); s > 768 {
		w, h = w*768/s, h*768/s
	}
	tiles := ceilDiv(w, 512) * ceilDiv(h, 512)
	return imageBase + imageTile*tiles
}

// The tile formula's costs.
const (
	imageBase = 85
	imageTile = 170
)

func ceilDiv(v, d float64) int {
	n := int(v / d)
	if float64(n)*d < v {
		n++
	}
	return max(n, 1)
}
