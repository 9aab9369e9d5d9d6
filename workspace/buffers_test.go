package workspace

import "testing"

func TestIncrementalEditsMultiByte(t *testing.T) {
	// "é" is 2 bytes/1 unit, "中" 3 bytes/1 unit, "😀" 4 bytes/2 units,
	// "e\u0301" is a combining sequence of two code points (2 units).
	const text = "héllo 中文\n😀 x\ne\u0301 end\r\nlast"
	rng := func(l1, c1, l2, c2 uint32) *Range {
		return &Range{Start: Position{l1, c1}, End: Position{l2, c2}}
	}
	tests := []struct {
		name    string
		enc     Encoding
		changes []Change
		want    string
	}{
		{"replace CJK", UTF16, []Change{{rng(0, 6, 0, 8), "世界"}}, "héllo 世界\n😀 x\ne\u0301 end\r\nlast"},
		{"after emoji counts two units", UTF16, []Change{{rng(1, 3, 1, 4), "y"}}, "héllo 中文\n😀 y\ne\u0301 end\r\nlast"},
		{"delete emoji", UTF16, []Change{{rng(1, 0, 1, 2), ""}}, "héllo 中文\n x\ne\u0301 end\r\nlast"},
		{"inside surrogate pair stays before it", UTF16, []Change{{rng(1, 1, 1, 1), "!"}}, "héllo 中文\n!😀 x\ne\u0301 end\r\nlast"},
		{"combining mark is its own unit", UTF16, []Change{{rng(2, 1, 2, 2), ""}}, "héllo 中文\n😀 x\ne end\r\nlast"},
		{"past end of line clamps before CRLF", UTF16, []Change{{rng(2, 99, 2, 99), "!"}}, "héllo 中文\n😀 x\ne\u0301 end!\r\nlast"},
		{"multi-line replace", UTF16, []Change{{rng(0, 1, 2, 2), "-"}}, "h- end\r\nlast"},
		{"sequence of edits", UTF16, []Change{{rng(0, 0, 0, 0), "😀"}, {rng(0, 2, 0, 3), "H"}}, "😀Héllo 中文\n😀 x\ne\u0301 end\r\nlast"},
		{"utf-8 offsets", UTF8, []Change{{rng(0, 7, 0, 13), "世界"}}, "héllo 世界\n😀 x\ne\u0301 end\r\nlast"},
		{"full replace", UTF16, []Change{{nil, "new"}}, "new"},
		{"past last line appends", UTF16, []Change{{rng(9, 0, 9, 0), "!"}}, text + "!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyChanges(text, tt.changes, tt.enc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if _, err := ApplyChanges(text, []Change{{rng(1, 0, 0, 0), ""}}, UTF16); err == nil {
		t.Fatal("reversed range: want error")
	}
}

func TestPositionRoundTrip(t *testing.T) {
	const text = "a😀b\n中e\u0301\r\nz"
	for off := 0; off <= len(text); off++ {
		for _, enc := range []Encoding{UTF16, UTF8} {
			pos := PositionOf(text, off, enc)
			back := Offset(text, pos, enc)
			// Offsets inside a rune or between \r and \n map to a rune boundary.
			if back > off || off-back > 3 {
				t.Fatalf("%s offset %d -> %+v -> %d", enc, off, pos, back)
			}
		}
	}
	if p := PositionOf(text, len("a😀"), UTF16); p != (Position{0, 3}) {
		t.Fatalf("after emoji: %+v", p)
	}
}
