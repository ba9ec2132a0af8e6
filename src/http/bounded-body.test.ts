import { expect, test } from "bun:test";
import { readBoundedBody } from "./bounded-body.ts";

/** A body without Content-Length of `chunks` chunks of `size` bytes, counting how many the reader pulled. */
function streamed(chunks: number, size: number) {
  const state = { pulled: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (state.pulled === chunks) return c.close();
      state.pulled++;
      c.enqueue(new Uint8Array(size).fill(state.pulled));
    },
  });
  return { request: new Request("http://localhost/", { method: "POST", body }), state };
}

test("a chunked body within the limit is read whole, bytes in order", async () => {
  const { request } = streamed(5, 1000);
  const bytes = await readBoundedBody(request, 5000);
  expect(bytes.byteLength).toBe(5000);
  expect([bytes[0], bytes[999], bytes[1000], bytes[4999]]).toEqual([1, 1, 2, 5]);
});

test("a chunked body past the limit: 413 PAYLOAD_TOO_LARGE once the count passes it, the rest never pulled", async () => {
  const { request, state } = streamed(100_000, 1024);
  await expect(readBoundedBody(request, 10 * 1024)).rejects.toMatchObject({ status: 413, code: "PAYLOAD_TOO_LARGE", details: { body: "must be at most 10240 bytes" } });
  expect(state.pulled).toBeLessThan(20);
});

test("a declared Content-Length over the limit is refused before reading; within it, read; no body is empty", async () => {
  const declared = new Request("http://localhost/", { method: "POST", body: "x".repeat(101), headers: { "content-length": "101" } });
  await expect(readBoundedBody(declared, 100)).rejects.toMatchObject({ status: 413 });
  expect(declared.bodyUsed).toBe(false);
  expect(new TextDecoder().decode(await readBoundedBody(new Request("http://localhost/", { method: "POST", body: "hello" }), 5))).toBe("hello");
  expect((await readBoundedBody(new Request("http://localhost/", { method: "POST" }), 5)).byteLength).toBe(0);
});
