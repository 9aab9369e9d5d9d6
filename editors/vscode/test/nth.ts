// A list's item in a test: the test fails with a clear message when the list
// is shorter than it expects, instead of with a TypeError later.
import assert from "node:assert/strict";

/** Item i of xs (negative: from the end, as Array.prototype.at); fails the test when there is none. */
export function nth<T>(xs: readonly T[], i: number): T {
  const x = xs.at(i);
  assert.ok(x !== undefined, `expected an item ${i} among ${xs.length}`);
  return x;
}
