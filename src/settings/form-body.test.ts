import { expect, test } from "bun:test";
import { readFormBody } from "./form-body.ts";

const URLENC = "application/x-www-form-urlencoded";
const post = (body: string | ReadableStream<Uint8Array>, type = URLENC) => new Request("http://localhost/settings/x", { method: "POST", body, headers: { "content-type": type } });

test("urlencoded: decoded, a repeated name becomes a list in order (the events checkboxes), null prototype", async () => {
  const form = await readFormBody(post("_csrf=t0k&events=VIDEO_UPLOADED&events=LIVESTREAM_STARTED&events=VIDEO_TRANSCODING_FAILED&url=https%3A%2F%2Fa.test%2Fh&d=a+b"), URLENC);
  expect({ ...form }).toEqual({ _csrf: "t0k", events: ["VIDEO_UPLOADED", "LIVESTREAM_STARTED", "VIDEO_TRANSCODING_FAILED"], url: "https://a.test/h", d: "a b" });
  expect(Object.getPrototypeOf(form)).toBeNull();
  expect((await readFormBody(post("__proto__=x"), URLENC)).__proto__).toBe("x");
});

test("another content type is read (bounded) and ignored: an empty form", async () => {
  expect({ ...(await readFormBody(post('{"_csrf":"t"}', "application/json"), "application/json")) }).toEqual({});
  expect({ ...(await readFormBody(new Request("http://localhost/", { method: "POST" }), undefined)) }).toEqual({});
});

test("over 64 KiB, chunked or declared: 413 PAYLOAD_TOO_LARGE while reading", async () => {
  const big = `password=${"a".repeat(64 * 1024)}`;
  await expect(readFormBody(post(big), URLENC)).rejects.toMatchObject({ status: 413, code: "PAYLOAD_TOO_LARGE" });
  let sent = 0;
  const chunked = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent++ === 1024) c.close();
      else c.enqueue(new Uint8Array(1024).fill(0x61));
    },
  });
  await expect(readFormBody(post(chunked), URLENC)).rejects.toMatchObject({ status: 413, code: "PAYLOAD_TOO_LARGE" });
  // It stopped reading at the limit, not at the end of the stream.
  expect(sent).toBeLessThan(200);
  expect({ ...(await readFormBody(post(`password=${"a".repeat(60 * 1024)}`), URLENC)) }.password).toHaveLength(60 * 1024);
});
