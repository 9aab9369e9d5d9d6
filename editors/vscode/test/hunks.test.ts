// Unit tests of the review's hunk logic: a whole-region replacement is cut
// into the minimal hunks, the text edits between two texts rebuild the second
// from the first (final newline, CRLF, empty texts), a rejected hunk's lines
// go back, and LSP text edits apply as an editor applies them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { applyTextEdits, between, editsBetween, hunkKey, hunkLines, revertEdit, splitLines } from "../src/hunks";
import { nth } from "./nth";

const file = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";

test("a replacement of lines 2-7 that changes two of them is two hunks of one line each", () => {
  const proposal = "one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\neight\n";
  const hs = between(file, proposal);
  assert.deepEqual(hs, [
    { from: 1, to: 2, at: 1, old: ["two\n"], lines: ["TWO\n"] },
    { from: 6, to: 7, at: 6, old: ["seven\n"], lines: ["SEVEN\n"] },
  ]);
  assert.deepEqual(hs.map(hunkLines), ["line 2", "line 7"]);
  assert.notEqual(hunkKey(nth(hs, 0)), hunkKey(nth(hs, 1)));
});

test("insertions and removals are hunks with no old lines or no new ones, placed in the new text", () => {
  const hs = between("a\nb\nc\n", "a\nx\ny\nb\n");
  assert.deepEqual(hs, [
    { from: 1, to: 1, at: 1, old: [], lines: ["x\n", "y\n"] },
    { from: 2, to: 3, at: 4, old: ["c\n"], lines: [] },
  ]);
  assert.deepEqual(hs.map(hunkLines), ["lines 2-3", "after line 4"]);
  assert.equal(hunkLines(nth(between("a\nb\n", "b\n"), 0)), "at the top");
});

test("lines keep their line breaks: a missing final newline and CRLF survive", () => {
  assert.deepEqual(splitLines(""), []);
  assert.deepEqual(splitLines("a\r\nb"), ["a\r\n", "b"]);
  assert.deepEqual(between("a\nb", "a\nb\n"), [{ from: 1, to: 2, at: 1, old: ["b"], lines: ["b\n"] }]);
});

test("the edits between two texts turn the first into the second, one edit per hunk", () => {
  const cases: [string, string][] = [
    [file, "one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\neight\n"],
    ["a\nb", "a\nB"],
    ["a\nb", "a\nb\nc"],
    ["a\nb\n", "a\nb\nc\n"],
    ["", "new file\n"],
    ["gone\n", ""],
    ["x\r\ny\r\nz\r\n", "x\r\nY\r\nz\r\n"],
    ["a\n", "b\na\nc"],
  ];
  for (const [a, b] of cases) {
    const edits = editsBetween(a, b);
    assert.equal(applyTextEdits(a, edits), b, JSON.stringify([a, b, edits]));
    assert.equal(edits.length, between(a, b).length);
  }
});

test("random texts round-trip through their edits, and reverting every hunk gives the old text back", () => {
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  const text = () => Array.from({ length: rand(8) }, () => "abc".charAt(rand(3)) + (rand(5) ? "\n" : "")).join("");
  for (let i = 0; i < 500; i++) {
    const a = text();
    const b = text();
    assert.equal(applyTextEdits(a, editsBetween(a, b)), b, JSON.stringify([a, b]));
    let reverted = b;
    for (const h of between(a, b).reverse()) {
      reverted = applyTextEdits(reverted, [revertEdit(splitLines(reverted), h)]);
    }
    assert.equal(reverted, a, JSON.stringify([a, b]));
  }
});

test("rejecting one hunk puts back only its lines", () => {
  const proposal = "one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\neight\n";
  const second = nth(between(file, proposal), 1);
  assert.equal(applyTextEdits(proposal, [revertEdit(splitLines(proposal), second)]), "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n");
});

test("LSP text edits apply as an editor applies them: inserts at one place in order, past a line's end clamped, CRLF lines", () => {
  const at = (line: number, character: number) => ({ line, character });
  assert.equal(
    applyTextEdits("ab\ncd\n", [
      { range: { start: at(0, 1), end: at(0, 1) }, newText: "1" },
      { range: { start: at(0, 1), end: at(0, 1) }, newText: "2" },
      { range: { start: at(1, 0), end: at(1, 99) }, newText: "CD" },
    ]),
    "a12b\nCD\n",
  );
  assert.equal(applyTextEdits("x\r\ny\r\n", [{ range: { start: at(0, 0), end: at(0, 9) }, newText: "X" }]), "X\r\ny\r\n");
  assert.equal(applyTextEdits("x", [{ range: { start: at(5, 0), end: at(5, 0) }, newText: "!" }]), "x!");
});
