import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createEventSealer } from "./event-sealer.ts";
import { loadServerSecret } from "./server-secret.ts";

const secret = () => loadServerSecret("/nonexistent", randomBytes(32).toString("hex"));
const payload = { stream: { id: "str_1", stream_key: "k3yk3yk3y", rtmp_url: "rtmp://h/live/k3yk3yk3y?sig=abc" } };

test("a payload and a body round-trip, and their stored forms hide the secrets", () => {
  const s = createEventSealer(secret());
  const stored = s.sealPayload(payload, "evt_1");
  expect(JSON.stringify(stored)).not.toContain("k3yk3yk3y");
  expect(s.openPayload(JSON.parse(JSON.stringify(stored)), "evt_1")).toEqual(payload);
  const body = JSON.stringify({ event: "LIVESTREAM_SCHEDULED", data: payload });
  const sealed = s.sealBody(body, "dlv_1");
  expect(sealed).toStartWith("v1.");
  expect(sealed).not.toContain("k3yk3yk3y");
  expect(s.openBody(sealed, "dlv_1")).toBe(body);
});

test("a sealed value moved to another row, or read under another secret, does not open", () => {
  const s = createEventSealer(secret());
  const stored = s.sealPayload(payload, "evt_1");
  expect(() => s.openPayload(stored, "evt_2")).toThrow(/SECRET_KEY/);
  expect(() => createEventSealer(secret()).openBody(s.sealBody("{}", "dlv_1"), "dlv_1")).toThrow(/SECRET_KEY/);
});

test("rows written before sealing (plaintext) open as they are", () => {
  const s = createEventSealer(secret());
  expect(s.openPayload(payload, "evt_1")).toEqual(payload);
  expect(s.openBody('{"event":"VIDEO_UPLOADED"}', "dlv_1")).toBe('{"event":"VIDEO_UPLOADED"}');
});
