import { expect, test } from "bun:test";
import { normalizeWords, wordAccuracy, wordEditDistance } from "./word-accuracy.ts";

test("word accuracy is 1 − WER over normalised words", () => {
  expect(normalizeWords("Good morning, World!")).toEqual(["good", "morning", "world"]);
  expect(wordEditDistance(["a", "b", "c"], ["a", "x", "c", "d"])).toBe(2);
  expect(wordAccuracy("The cat sat.", "the cat sat")).toBe(1);
  expect(wordAccuracy("the cat sat on the mat", "the bat sat on mat")).toBeCloseTo(4 / 6, 6);
  expect(wordAccuracy("one", "many wrong words here")).toBe(0);
});
