import { expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import * as sdk from "../../packages/client/src/verify-webhook.ts";
import { signatureHeader } from "./sign.ts";
import { checkWebhook, verifyWebhook } from "./verify-webhook.ts";

const secret = "whsec_test";
const body = '{"event":"VIDEO_UPLOADED","created_at":"2026-01-01T00:00:00.000Z","data":{"video":{"title":"é"}}}';
const now = 1_800_000_000;
const at = (header: string | null, b: string | Uint8Array = body, nowSeconds = now) => ({ body: b, headers: header, secret, nowSeconds });

test("the header is t=<seconds>,v1=<hex hmac-sha256 of 't.body'>", () => {
  const expected = createHmac("sha256", secret).update(`${now}.${body}`).digest("hex");
  expect(signatureHeader(secret, body, now)).toBe(`t=${now},v1=${expected}`);
  expect(signatureHeader(secret, body, now + 0.9)).toBe(`t=${now},v1=${expected}`);
});

test("a signed body verifies, as a string or as bytes, from the header or from the request's headers", () => {
  const header = signatureHeader(secret, body, now);
  expect(verifyWebhook(at(header))).toBe(true);
  expect(verifyWebhook(at(header, new TextEncoder().encode(body), now + 10))).toBe(true);
  expect(verifyWebhook({ body, headers: new Headers({ "X-Service-Signature": header }), secret, nowSeconds: now })).toBe(true);
  expect(verifyWebhook({ body, headers: { "x-service-signature": header }, secret, nowSeconds: now })).toBe(true);
  expect(checkWebhook(at(header))).toEqual({ valid: true, timestamp: now });
});

test("one verifier: the project's export is the SDK's function, with one argument form", () => {
  expect(verifyWebhook).toBe(sdk.verifyWebhook);
  expect(checkWebhook).toBe(sdk.checkWebhook);
  expect(verifyWebhook.length).toBe(1);
});

test("the positional forms of either old export are refused with a TypeError, never answered", () => {
  const header = signatureHeader(secret, body, now);
  const call =
    (f: (...a: unknown[]) => unknown, ...a: unknown[]) =>
    () =>
      f(...a);
  // The service's old order (secret, header, body) and the SDK's old order (body, headers, secret).
  expect(call(verifyWebhook as never, secret, header, body)).toThrow(TypeError);
  expect(call(verifyWebhook as never, body, header, secret)).toThrow(TypeError);
  expect(call(checkWebhook as never, body, new Headers(), secret)).toThrow("checkWebhook takes one object");
  // A receiver whose secret variable is unset is told so.
  expect(() => verifyWebhook({ body, headers: header, secret: undefined as unknown as string })).toThrow("secret must be a non-empty string");
  expect(() => verifyWebhook({ body, headers: header, secret: "" })).toThrow(TypeError);
});

test("a changed body, secret or timestamp fails", () => {
  const header = signatureHeader(secret, body, now);
  expect(checkWebhook(at(header, body.replace("é", "e")))).toEqual({ valid: false, reason: "mismatch" });
  expect(verifyWebhook({ ...at(header), secret: "whsec_other" })).toBe(false);
  expect(verifyWebhook(at(header.replace(`t=${now}`, `t=${now + 1}`)))).toBe(false);
  // Re-serialising changes the bytes.
  expect(verifyWebhook(at(header, JSON.stringify(JSON.parse(body), null, 1)))).toBe(false);
});

test("old and future timestamps are refused past the tolerance", () => {
  const header = signatureHeader(secret, body, now);
  expect(checkWebhook(at(header, body, now + 301))).toEqual({ valid: false, reason: "expired" });
  expect(verifyWebhook({ ...at(header, body, now + 301), toleranceSeconds: 600 })).toBe(true);
  expect(verifyWebhook(at(header, body, now - 301))).toBe(false);
});

test("missing, malformed and wrong-length signatures fail without throwing", () => {
  const header = signatureHeader(secret, body, now);
  const v1 = header.split("v1=")[1]!;
  expect(checkWebhook(at(null))).toMatchObject({ reason: "missing" });
  expect(checkWebhook(at(""))).toMatchObject({ reason: "missing" });
  expect(checkWebhook({ body, headers: new Headers(), secret })).toMatchObject({ reason: "missing" });
  expect(checkWebhook(at("garbage"))).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(at(`v1=${v1}`))).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(at(`t=abc,v1=${v1}`))).toMatchObject({ reason: "malformed" });
  expect(checkWebhook(at(`t=${now},v1=${v1.slice(2)}`))).toMatchObject({ reason: "mismatch" });
  expect(checkWebhook(at(`t=${now},v1=${v1}00`))).toMatchObject({ reason: "mismatch" });
  expect(checkWebhook(at(`t=${now},v1=${v1.toUpperCase()}`))).toMatchObject({ reason: "mismatch" });
});

test("any one of several v1 signatures may match (secret rotation)", () => {
  const good = signatureHeader(secret, body, now).split("v1=")[1]!;
  expect(verifyWebhook(at(`t=${now},v1=${"0".repeat(64)},v1=${good}`))).toBe(true);
});
