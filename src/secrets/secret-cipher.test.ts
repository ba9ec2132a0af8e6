import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createSecretCipher } from "./secret-cipher.ts";

test("seals and opens; the sealed text hides the plaintext and differs each time", () => {
  const c = createSecretCipher(randomBytes(32));
  const a = c.seal("whsec_abc", "whk_1");
  expect(a).not.toContain("whsec_abc");
  expect(c.seal("whsec_abc", "whk_1")).not.toBe(a);
  expect(c.open(a, "whk_1")).toBe("whsec_abc");
});

test("the wrong key, the wrong row or a changed byte does not open", () => {
  const c = createSecretCipher(randomBytes(32));
  const sealed = c.seal("whsec_abc", "whk_1");
  expect(() => c.open(sealed, "whk_2")).toThrow();
  expect(() => createSecretCipher(randomBytes(32)).open(sealed, "whk_1")).toThrow();
  const raw = Buffer.from(sealed.slice(3), "base64url");
  raw[14]! ^= 1;
  expect(() => c.open(`v1.${raw.toString("base64url")}`, "whk_1")).toThrow();
  expect(() => createSecretCipher(randomBytes(16))).toThrow("32-byte");
});
