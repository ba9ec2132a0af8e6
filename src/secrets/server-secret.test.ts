import { expect, test } from "bun:test";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServerSecret } from "./server-secret.ts";

test("the key file is created once with mode 0600 and reused", () => {
  const dir = mkdtempSync(join(tmpdir(), "secret-"));
  const a = loadServerSecret(dir);
  const b = loadServerSecret(dir);
  expect(statSync(join(dir, "secret.key")).mode & 0o777).toBe(0o600);
  const tag = a.sign("upload", "upl_1");
  expect(b.verify("upload", "upl_1", tag)).toBe(true);
  expect(b.verify("rtmp", "upl_1", tag)).toBe(false);
  expect(b.verify("upload", "upl_2", tag)).toBe(false);
  expect(b.verify("upload", "upl_1", tag.slice(1))).toBe(false);
});

test("SECRET_KEY is used when given and must be long enough", () => {
  const dir = mkdtempSync(join(tmpdir(), "secret-"));
  const hex = "ab".repeat(32);
  expect(loadServerSecret(dir, hex).sign("p", "m")).toBe(loadServerSecret(mkdtempSync(join(tmpdir(), "s-")), hex).sign("p", "m"));
  expect(() => loadServerSecret(dir, "abcd")).toThrow("SECRET_KEY");
});
