import { expect, test } from "bun:test";
import fc from "fast-check";
import { exceedsDepth, MAX_JSON_DEPTH, readJsonBody } from "./json-body.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

function depthOf(v: unknown): number {
  if (v === null || typeof v !== "object") return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + children.reduce((m: number, c) => Math.max(m, depthOf(c)), 0);
}

test("the byte scan agrees with the parsed depth on arbitrary JSON (strings full of brackets and escapes included)", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 40 }), fc.integer({ min: 0, max: 40 }), (value, limit) => {
      const text = JSON.stringify(value);
      expect(exceedsDepth(bytes(text), limit)).toBe(depthOf(value) > limit);
    }),
    { numRuns: 500 },
  );
  expect(exceedsDepth(bytes('{"a":"[[[[\\"[[[["}'), 1)).toBe(false);
  expect(exceedsDepth(bytes("[".repeat(MAX_JSON_DEPTH)))).toBe(false);
  expect(exceedsDepth(bytes("[".repeat(MAX_JSON_DEPTH + 1)))).toBe(true);
});

test("readJsonBody: deep, invalid UTF-8 and invalid JSON are 422 with details.body; empty is null", async () => {
  const req = (body: string | Uint8Array) => new Request("http://localhost/", { method: "POST", body });
  await expect(readJsonBody(req("[".repeat(60_000) + "]".repeat(60_000)))).rejects.toMatchObject({ status: 422, details: { body: expect.stringContaining("32") } });
  await expect(readJsonBody(req(new Uint8Array([0x7b, 0xff, 0x7d])))).rejects.toMatchObject({ status: 422, details: { body: expect.any(String) } });
  await expect(readJsonBody(req("{"))).rejects.toMatchObject({ status: 422, details: { body: "is not valid JSON" } });
  expect(await readJsonBody(req(""))).toBeNull();
  expect(await readJsonBody(req('{"a":[1,{"b":null}]}'))).toEqual({ a: [1, { b: null }] });
});
