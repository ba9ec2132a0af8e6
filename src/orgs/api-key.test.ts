import { expect, test } from "bun:test";
import { generateApiKey, hashSecret, parseApiKey, secretMatches } from "./api-key.ts";

test("a generated key parses back to its prefix and a secret that matches the stored hash", () => {
  const { key, prefix, secretHash } = generateApiKey();
  expect(key).toMatch(/^sk_live_[0-9A-Za-z]{12}_[0-9A-Za-z]{32}$/);
  const parsed = parseApiKey(key)!;
  expect(parsed.prefix).toBe(prefix);
  expect(secretHash).not.toContain(parsed.secret);
  expect(secretMatches(parsed.secret, secretHash)).toBe(true);
  expect(
    secretMatches(
      parsed.secret.replace(/.$/, (c) => (c === "a" ? "b" : "a")),
      secretHash,
    ),
  ).toBe(false);
});

test("malformed keys do not parse", () => {
  for (const bad of ["", "sk_live_", "sk_test_abcdefghijkl_" + "a".repeat(32), "sk_live_abc_def", "Bearer x", "sk_live_abcdefghijkl_" + "a".repeat(31) + "!"]) {
    expect(parseApiKey(bad)).toBeNull();
  }
});

test("a stored hash of a different length never matches", () => {
  expect(secretMatches("a".repeat(32), hashSecret("a".repeat(32)).slice(1))).toBe(false);
});

test("constantTimeEqual compares whole strings of equal length only", async () => {
  const { constantTimeEqual } = await import("./api-key.ts");
  expect(constantTimeEqual("abcd", "abcd")).toBe(true);
  expect(constantTimeEqual("abcd", "abce")).toBe(false);
  expect(constantTimeEqual("bbcd", "abcd")).toBe(false);
  expect(constantTimeEqual("abc", "abcd")).toBe(false);
  expect(constantTimeEqual("", "")).toBe(true);
});
