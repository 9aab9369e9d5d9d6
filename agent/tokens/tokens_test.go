package tokens

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// sample is a text the estimate is calibrated on.
type sample struct {
	name string
	text string
}

// corpus is the repository's own text in 4 KiB pieces (code, docs,
// fixtures, lock files) and the prose in testdata/tokens.
func corpus(t testing.TB) []sample {
	root := filepath.Join("..", "..")
	var out []sample
	exts := []string{".go", ".md", ".json", ".lua", ".ts", ".sh", ".txt", ".mjs"}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == ".git" || n == "dist" || strings.HasPrefix(n, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(exts, filepath.Ext(p)) {
			return nil
		}
		b, _ := os.ReadFile(p)
		if len(b) > 1<<20 || !utf8.Valid(b) {
			return nil
		}
		if strings.Contains(p, filepath.Join("testdata", "tokens")) {
			out = append(out, sample{p, string(b)})
			return nil
		}
		for i := 0; i+1024 <= len(b); i += 4096 {
			out = append(out, sample{p, string(b[i:min(len(b), i+4096)])})
		}
		return nil
	})
	if len(out) < 100 {
		t.Fatalf("only %d samples", len(out))
	}
	return out
}

// The estimate stays within the stated range of the real counts of
// cl100k_base and o200k_base on every sample, and the test reports the
// distribution (run with -v to see it).
func TestEstimateAgainstRealTokenizers(t *testing.T) {
	samples := corpus(t)
	for _, c := range []struct {
		name tokenizer.Encoding
		// The range the package documentation states. lo is the bound that
		// matters: an under-count can overflow the model's context. hi
		// bounds the waste; the corpus is the repository's own text, which
		// grows, so it has room above the largest ratio measured (1.41).
		lo, hi float64
	}{{tokenizer.Cl100kBase, 0.85, 1.50}, {tokenizer.O200kBase, 0.85, 1.90}} {
		name, lo, hi := c.name, c.lo, c.hi
		enc, err := tokenizer.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		ratios := make([]float64, len(samples))
		for i, s := range samples {
			ids, _, err := enc.Encode(s.text)
			if err != nil {
				t.Fatal(err)
			}
			ratios[i] = float64(Estimate(s.text)) / float64(len(ids))
			if strings.Contains(s.name, filepath.Join("testdata", "tokens")) {
				t.Logf("%s: %s: %.2f", name, filepath.Base(s.name), ratios[i])
			}
			if ratios[i] < lo || ratios[i] > hi {
				t.Errorf("%s: %s: estimate %d, real %d (%.2f)", name, s.name, Estimate(s.text), len(ids), ratios[i])
			}
		}
		slices.Sort(ratios)
		q := func(p float64) float64 { return ratios[int(p*float64(len(ratios)-1))] }
		t.Logf("%s over %d samples: min %.2f, p5 %.2f, median %.2f, p95 %.2f, max %.2f", name, len(ratios), q(0), q(0.05), q(0.5), q(0.95), q(1))
	}
}

func TestEstimateSmallCases(t *testing.T) {
	for _, c := range []struct {
		in     string
		lo, hi int
	}{
		{"", 0, 0},
		{"hello", 1, 1},
		{" world", 1, 1},
		{"hello world", 2, 2},
		{"contextTokens", 2, 3},
		{"1234567", 3, 3},
		{"\n\n\t\t", 1, 1},
		{"func (rt *Runtime) route(s graph.State) []graph.Route {", 12, 22},
	} {
		if got := Estimate(c.in); got < c.lo || got > c.hi {
			t.Errorf("Estimate(%q) = %d, want %d..%d", c.in, got, c.lo, c.hi)
		}
	}
}

func FuzzEstimate(f *testing.F) {
	f.Add("func main() { fmt.Println(\"héllo, 世界 🚀\") }")
	f.Fuzz(func(t *testing.T, s string) {
		n := Estimate(s)
		if n < 0 || n > len(s)+1 {
			t.Fatalf("Estimate(%q) = %d for %d bytes", s, n, len(s))
		}
		if s != "" && strings.TrimSpace(s) != "" && n == 0 {
			t.Fatalf("Estimate(%q) = 0", s)
		}
	})
}

func BenchmarkEstimate(b *testing.B) {
	text, _ := os.ReadFile("tokens.go")
	s := strings.Repeat(string(text), 4)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Estimate(s)
	}
}

// TestImage checks the tile formula against OpenAI's published examples.
func TestImage(t *testing.T) {
	for _, c := range []struct{ w, h, want int }{
		{1024, 1024, 765},  // 768×768: 4 tiles
		{2048, 4096, 1105}, // 1024×2048, then 768×1536: 6 tiles
		{512, 512, 255},    // one tile
		{100, 100, 255},    // a small image is still a tile
		{4096, 8192, 1105}, // scaled to fit 2048 first
		{0, 0, 85},
	} {
		if got := Image(c.w, c.h); got != c.want {
			t.Errorf("Image(%d, %d) = %d, want %d", c.w, c.h, got, c.want)
		}
	}
}
