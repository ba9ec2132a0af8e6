import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createOutboundGuard } from "../net/outbound-guard.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import { type FetchSourceOptions, fetchSource } from "./fetch-source.ts";

/**
 * fetchSource against a real HTTP server on 127.0.0.1 and a real temporary
 * directory. Each path of the server plays one kind of source: good, missing,
 * too large, silent, trickling, redirecting, failing.
 */

/** A body of known bytes, sent in several chunks so the stream is really streamed. */
const BODY = new Uint8Array(300_000).map((_, i) => (i * 31 + (i >> 8)) & 255);
const CHUNK = 16 * 1024;

function chunked(bytes: Uint8Array, opts: { atEnd?: "stall" | "close" } = {}): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    async pull(controller) {
      if (offset >= bytes.length) {
        // "stall": the connection stays open and silent until the server stops.
        if (opts.atEnd === "stall") return new Promise<void>(() => undefined);
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + CHUNK));
      offset += CHUNK;
    },
  });
}

/** Sends a small chunk every 20 ms, forever: never silent, never finished. */
function trickle(): ReadableStream<Uint8Array> {
  let timer: ReturnType<typeof setInterval> | undefined;
  return new ReadableStream({
    start(controller) {
      timer = setInterval(() => {
        try {
          controller.enqueue(new Uint8Array(64));
        } catch {
          clearInterval(timer);
        }
      }, 20);
    },
    cancel() {
      clearInterval(timer);
    },
  });
}

let server: ReturnType<typeof Bun.serve>;
let origin: string;
const hits: string[] = [];

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      hits.push(path);
      switch (path) {
        case "/good.mp4":
          return new Response(chunked(BODY), { headers: { "content-type": "video/mp4" } });
        case "/missing.mp4":
          return new Response("not here", { status: 404 });
        case "/forbidden.mp4":
          return new Response("no", { status: 403 });
        case "/broken.mp4":
          return new Response("oops", { status: 500 });
        case "/unavailable.mp4":
          return new Response("later", { status: 503 });
        case "/empty.mp4":
          return new Response(new Uint8Array(0));
        case "/declared-large.mp4":
          // A Content-Length over the limit: refused before any byte is written.
          return new Response(new Uint8Array(200_000));
        case "/undeclared-large.mp4":
          // Chunked, no Content-Length: refused once the limit is crossed mid-body.
          return new Response(chunked(BODY));
        case "/stall-mid-body.mp4":
          return new Response(chunked(BODY.slice(0, 3 * CHUNK), { atEnd: "stall" }));
        case "/stall-before-headers.mp4":
          await Bun.sleep(5_000);
          return new Response(BODY);
        case "/trickle.mp4":
          return new Response(trickle());
        case "/redirect":
          return new Response(null, { status: 302, headers: { location: "/hop" } });
        case "/hop":
          return new Response(null, { status: 301, headers: { location: `${origin}/good.mp4` } });
        case "/redirect-to-metadata":
          return new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } });
        case "/redirect-no-location":
          return new Response(null, { status: 302 });
        case "/redirect-to-ftp":
          return new Response(null, { status: 302, headers: { location: "ftp://example.com/a.mp4" } });
        case "/loop":
          return new Response(null, { status: 302, headers: { location: "/loop" } });
        default:
          return new Response("unknown", { status: 404 });
      }
    },
  });
  origin = `http://127.0.0.1:${server.port}`;
});

afterAll(() => {
  server.stop(true);
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fetch-source-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  hits.length = 0;
});

/**
 * The real SSRF guard refuses every private address; the test server is on
 * loopback, so its own origin is let through and everything else goes to
 * the real guard (as ALLOW_PRIVATE_NETWORK=0 would judge it).
 */
const strict = createOutboundGuard({ allowPrivate: false });
const checked: string[] = [];
const guard = async (url: URL) => {
  checked.push(url.href);
  if (url.origin === origin) return;
  await strict.check(url);
};

let n = 0;
const destOf = () => join(dir, `source-${++n}.mp4`);

function opts(over: Partial<FetchSourceOptions> = {}): FetchSourceOptions {
  return { signal: new AbortController().signal, maxBytes: 10 * 1024 * 1024, timeoutMs: 5_000, stallMs: 5_000, guard, ...over };
}

/** The error fetchSource rejected with (fails the test when it resolved). */
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("fetchSource resolved; expected a failure");
}

function expectPermanent(err: Error, code: string) {
  expect(err).toBeInstanceOf(PermanentWorkError);
  expect((err as PermanentWorkError).code).toBe(code);
}

describe("fetchSource", () => {
  test("a good body is streamed to disk byte-exact and its size returned", async () => {
    const dest = destOf();
    const size = await fetchSource(`${origin}/good.mp4`, dest, opts());
    expect(size).toBe(BODY.length);
    expect(Buffer.from(readFileSync(dest)).equals(Buffer.from(BODY))).toBe(true);
  });

  test("404 is permanent: SOURCE_NOT_FOUND, nothing written", async () => {
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/missing.mp4`, dest, opts()));
    expectPermanent(err, "SOURCE_NOT_FOUND");
    expect(err.message).toContain("404");
    expect(existsSync(dest)).toBe(false);
  });

  test("another 4xx is permanent: SOURCE_FETCH_FAILED", async () => {
    const err = await failure(fetchSource(`${origin}/forbidden.mp4`, destOf(), opts()));
    expectPermanent(err, "SOURCE_FETCH_FAILED");
    expect(err.message).toContain("403");
  });

  test("a 5xx is worth another attempt: not a PermanentWorkError, nothing written", async () => {
    for (const path of ["/broken.mp4", "/unavailable.mp4"]) {
      const dest = destOf();
      const err = await failure(fetchSource(`${origin}${path}`, dest, opts()));
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(PermanentWorkError);
      expect(existsSync(dest)).toBe(false);
    }
  });

  test("a declared Content-Length over maxBytes is refused before anything is written", async () => {
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/declared-large.mp4`, dest, opts({ maxBytes: 100_000 })));
    expectPermanent(err, "SOURCE_TOO_LARGE");
    expect(existsSync(dest)).toBe(false);
  });

  test("an undeclared body crossing maxBytes is refused mid-stream and the partial file removed", async () => {
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/undeclared-large.mp4`, dest, opts({ maxBytes: 100_000 })));
    expectPermanent(err, "SOURCE_TOO_LARGE");
    expect(existsSync(dest)).toBe(false);
  });

  test("an empty body is permanent: INPUT_UNSUPPORTED", async () => {
    const err = await failure(fetchSource(`${origin}/empty.mp4`, destOf(), opts()));
    expectPermanent(err, "INPUT_UNSUPPORTED");
  });
});

describe("fetchSource", () => {
  test("a source that goes silent mid-body trips stallMs: SOURCE_FETCH_TIMEOUT, the partial file removed", async () => {
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/stall-mid-body.mp4`, dest, opts({ stallMs: 300 })));
    expectPermanent(err, "SOURCE_FETCH_TIMEOUT");
    expect(err.message).toContain("sent nothing");
    expect(existsSync(dest)).toBe(false);
  });

  test("a source silent before its headers trips stallMs too", async () => {
    const err = await failure(fetchSource(`${origin}/stall-before-headers.mp4`, destOf(), opts({ stallMs: 200 })));
    expectPermanent(err, "SOURCE_FETCH_TIMEOUT");
    expect(err.message).toContain("sent nothing");
  });

  test("a trickle that is never silent is bounded by the overall timeoutMs, the partial file removed", async () => {
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/trickle.mp4`, dest, opts({ timeoutMs: 400, stallMs: 5_000 })));
    expectPermanent(err, "SOURCE_FETCH_TIMEOUT");
    expect(err.message).toContain("timed out");
    expect(existsSync(dest)).toBe(false);
  });

  test("the caller's abort signal stops the fetch mid-body (not reported as a timeout), the partial file removed", async () => {
    const dest = destOf();
    const abort = new AbortController();
    const reason = new PermanentWorkError("CANCELLED", "The work was cancelled.");
    const pending = fetchSource(`${origin}/stall-mid-body.mp4`, dest, opts({ signal: abort.signal }));
    // Aborted once the body has started arriving.
    for (let i = 0; i < 200 && !existsSync(dest); i++) await Bun.sleep(10);
    abort.abort(reason);
    const err = await failure(pending);
    expect((err as PermanentWorkError).code).not.toBe("SOURCE_FETCH_TIMEOUT");
    expect(existsSync(dest)).toBe(false);
  });

  test("an already aborted signal fetches nothing", async () => {
    const abort = new AbortController();
    abort.abort(new Error("shutdown"));
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/good.mp4`, dest, opts({ signal: abort.signal })));
    expect((err as PermanentWorkError).code).not.toBe("SOURCE_FETCH_TIMEOUT");
    expect(existsSync(dest)).toBe(false);
  });
});

describe("fetchSource", () => {
  test("redirects are followed, every hop through the guard", async () => {
    checked.length = 0;
    const dest = destOf();
    const size = await fetchSource(`${origin}/redirect`, dest, opts());
    expect(size).toBe(BODY.length);
    expect(Buffer.from(readFileSync(dest)).equals(Buffer.from(BODY))).toBe(true);
    expect(checked).toEqual([`${origin}/redirect`, `${origin}/hop`, `${origin}/good.mp4`]);
  });

  test("a redirect to a target the guard refuses refuses the fetch: SOURCE_URL_REFUSED, the target never called", async () => {
    checked.length = 0;
    const dest = destOf();
    const err = await failure(fetchSource(`${origin}/redirect-to-metadata`, dest, opts()));
    expectPermanent(err, "SOURCE_URL_REFUSED");
    expect(checked).toEqual([`${origin}/redirect-to-metadata`, "http://169.254.169.254/latest/meta-data/"]);
    expect(existsSync(dest)).toBe(false);
  });

  test("a guard refusing the first URL refuses before any request", async () => {
    const err = await failure(fetchSource("http://10.0.0.1/a.mp4", destOf(), opts()));
    expectPermanent(err, "SOURCE_URL_REFUSED");
  });

  test("a redirect loop stops at maxRedirects: SOURCE_FETCH_FAILED", async () => {
    const err = await failure(fetchSource(`${origin}/loop`, destOf(), opts({ maxRedirects: 3 })));
    expectPermanent(err, "SOURCE_FETCH_FAILED");
    expect(hits.filter((h) => h === "/loop")).toHaveLength(4);
  });

  test("a redirect without a Location, or to a URL that is not http(s), is permanent: SOURCE_FETCH_FAILED", async () => {
    for (const path of ["/redirect-no-location", "/redirect-to-ftp"]) {
      const err = await failure(fetchSource(`${origin}${path}`, destOf(), opts()));
      expectPermanent(err, "SOURCE_FETCH_FAILED");
    }
  });

  test("a host that does not resolve is permanent: SOURCE_FETCH_FAILED", async () => {
    const missing = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    const err = await failure(fetchSource("http://no-such-host.invalid/a.mp4", destOf(), opts({ guard: missing })));
    expectPermanent(err, "SOURCE_FETCH_FAILED");
  });

  test("a connection refused is worth another attempt", async () => {
    // A port that was just free: nothing listens there.
    const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = probe.port;
    probe.stop(true);
    const err = await failure(fetchSource(`http://127.0.0.1:${port}/a.mp4`, destOf(), opts({ guard: async () => undefined })));
    expect(err).not.toBeInstanceOf(PermanentWorkError);
  });
});
