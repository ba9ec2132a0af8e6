import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServerSecret } from "../secrets/server-secret.ts";
import { createDrmTokens, licencePath } from "./drm-tokens.ts";

const secret = loadServerSecret(mkdtempSync(join(tmpdir(), "drm-tok-")), "ab".repeat(32));
const HOUR = 3_600_000;
const T0 = Date.parse("2030-01-01T00:00:00Z");
const tokens = createDrmTokens({ secret, baseUrl: () => "https://v.example", ttlMs: 24 * HOUR });

test("a minted token verifies for its video until it expires, then says expired", () => {
  const { token, expiresAt, url } = tokens.mint("vid_a", T0);
  expect(token).toMatch(/^\d+\.[0-9a-f]{32}$/);
  expect(expiresAt.toISOString()).toBe("2030-01-02T00:00:00.000Z");
  expect(url).toBe(`https://v.example${licencePath("vid_a")}?token=${token}`);
  expect(url).toStartWith("https://v.example/drm/clearkey/vid_a/license?token=");
  expect(tokens.verify("vid_a", token, T0)).toBe("ok");
  expect(tokens.verify("vid_a", token, T0 + 24 * HOUR - 1)).toBe("ok");
  expect(tokens.verify("vid_a", token, T0 + 24 * HOUR)).toBe("expired");
});

test("another video's token, a changed expiry or tag, garbage and nothing are refused", () => {
  const { token } = tokens.mint("vid_a", T0);
  const [exp, tag] = token.split(".") as [string, string];
  expect(tokens.verify("vid_b", token, T0)).toBe("malformed");
  expect(tokens.verify("vid_a", `${Number(exp) + 3600}.${tag}`, T0)).toBe("malformed");
  expect(tokens.verify("vid_a", `${exp}.${tag.slice(0, 31)}${tag.endsWith("0") ? "1" : "0"}`, T0)).toBe("malformed");
  expect(tokens.verify("vid_a", `${exp}.${tag.toUpperCase()}`, T0)).toBe("malformed");
  for (const bad of ["x", `${exp}.`, `.${tag}`, `${exp}.${tag}.x`, `${exp}${tag}`, " " + token]) expect(tokens.verify("vid_a", bad, T0)).toBe("malformed");
  expect(tokens.verify("vid_a", "", T0)).toBe("missing");
  expect(tokens.verify("vid_a", null, T0)).toBe("missing");
});

test("a token signed under another server secret, or for another purpose, does not verify", () => {
  const other = createDrmTokens({ secret: loadServerSecret(mkdtempSync(join(tmpdir(), "drm-tok-")), "cd".repeat(32)), baseUrl: () => "x", ttlMs: HOUR });
  expect(tokens.verify("vid_a", other.mint("vid_a", T0).token, T0)).toBe("malformed");
  const exp = String(Math.ceil((T0 + HOUR) / 1000));
  // The same message signed for the upload purpose (src/videos/upload-store.ts).
  expect(tokens.verify("vid_a", `${exp}.${secret.sign("upload", `vid_a.${exp}`).slice(0, 32)}`, T0)).toBe("malformed");
});

test("the time to live is the configured one", () => {
  const short = createDrmTokens({ secret, baseUrl: () => "x", ttlMs: 5_000 });
  const { token, expiresAt } = short.mint("vid_a", T0);
  expect(expiresAt.getTime()).toBe(T0 + 5_000);
  expect(short.verify("vid_a", token, T0 + 4_999)).toBe("ok");
  expect(short.verify("vid_a", token, T0 + 5_000)).toBe("expired");
});
