import { expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { signatureHeader } from "./sign.ts";
import { checkWebhook, verifyWebhook } from "./verify-webhook.ts";

const secret = "whsec_test";
const body = '{"event":"VIDEO_UPLOADED","created_at":"2026-01-01T00:00:00.000Z","data":{"video":{"title":"é"}}}';
const now = 1_800_000_000;

test("the header is t=<seconds>,v1=<hex hmac-sha256 of 't.body'>", () => {
  const expected = createHmac("sha256", secret).update(`${now}.${body}`).digest("hex");
  expect(signatureHeader(secret, body, now)).toBe(`t=${now},v1=${expected}`);
  expect(signatureHeader(secret, body, now + 0.9)).toBe(`t=${now},v1=${expected}`);
});

test("a signed body verifies, as a string or as bytes", () => {
  const header = signatureHeader(secret, body, now);
  expect(verifyWebhook(secret, header, body, { nowSeconds: now })).toBe(true);
  expect(verifyWebhook(secret, header, new TextEncoder().encode(body), { nowSeconds: now + 10 })).toBe(true);
  expect(checkWebhook(secret, header, body, { nowSeconds: now })).toEqual({ valid: true, timestamp: now });
});

test("a changed body, secret or timestamp fails", () => {
  const header = signatureHeader(secret, body, now);
  expect(checkWebhook(secret, header, body.replace("é", "e"), { nowSeconds: now })).toEqual({ valid: false, reason: "mismatch" });
  expect(verifyWebhook("whsec_other", header, body, { nowSeconds: now })).toBe(false);
  expect(verifyWebhook(secret, header.replace(`t=${now}`, `t=${now + 1}`), body, { nowSeconds: now })).toBe(false);
  // Re-serialising changes the bytes.
  expect(verifyWebhook(secret, header, JSON.stringify(JSON.parse(body), null, 1), { nowSeconds: now })).toBe(false);
});

test("old and future timestamps are refused past the tolerance", () => {
  const header = signatureHeader(secret, body, now);
  expect(checkWebhook(secret, header, body, { nowSeconds: now + 301 }).valid).toBe(false);
  expect(checkWebhook(secret, header, body, { nowSeconds: now + 301 })).toEqual({ valid: false, reason: "expired" });
  expect(verifyWebhook(secret, header, body, { nowSeconds: now + 301, toleranceSeconds: 600 })).toBe(true);
  expect(verifyWebhook(secret, header, body, { nowSeconds: now - 301 })).toBe(false);
});

test("missing, malformed and wrong-length signatures fail without throwing", () => {
  const header = signatureHeader(secret, body, now);
  const v1 = header.split("v1=")[1]!;
  expect(checkWebhook(secret, null, body)).toMatchObject({ reason: "missing" });
  expect(checkWebhook(secret, "", body)).toMatchObject({ reason: "missing" });
  expect(checkWebhook(secret, "garbage", body)).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(secret, `v1=${v1}`, body, { nowSeconds: now })).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(secret, `t=abc,v1=${v1}`, body, { nowSeconds: now })).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(secret, `t=${now},v1=${v1.slice(2)}`, body, { nowSeconds: now })).toMatchObject({ reason: "mismatch" });
  expect(checkWebhook(secret, `t=${now},v1=${v1}00`, body, { nowSeconds: now })).toMatchObject({ reason: "mismatch" });
  expect(checkWebhook(secret, `t=${now},v1=${v1.toUpperCase()}`, body, { nowSeconds: now })).toMatchObject({ reason: "mismatch" });
});

test("any one of several v1 signatures may match (secret rotation)", () => {
  const good = signatureHeader(secret, body, now).split("v1=")[1]!;
  expect(verifyWebhook(secret, `t=${now},v1=${"0".repeat(64)},v1=${good}`, body, { nowSeconds: now })).toBe(true);
});
