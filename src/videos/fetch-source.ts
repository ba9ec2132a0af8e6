import { rm } from "node:fs/promises";
import { PermanentWorkError } from "../work/work-runner.ts";
import { OutboundRefusedError } from "../net/outbound-guard.ts";

export interface FetchSourceOptions {
  signal: AbortSignal;
  maxBytes: number;
  /** The whole fetch, headers to last byte (SOURCE_TIMEOUT_MS). */
  timeoutMs: number;
  /** The longest the source may send nothing, before the headers or between chunks (SOURCE_STALL_MS). */
  stallMs: number;
  /** Refuses private, loopback and link-local destinations (SSRF), unless allowed by config. */
  guard: (url: URL) => Promise<void>;
  maxRedirects?: number;
}

/** Resolver errors that mean "this name does not exist": asking again will not help. */
const DNS_MISSES = new Set(["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL"]);

function dnsMiss(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  return DNS_MISSES.has(String(e?.code ?? "")) || DNS_MISSES.has(String(e?.cause?.code ?? ""));
}

/**
 * A timer that aborts when nothing arrives for `ms`; `kick()` on every chunk
 * received restarts it, so only silence counts (a trickle is bounded by the
 * overall timeout instead).
 */
function stallTimer(ms: number) {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const kick = () => {
    if (timer) clearTimeout(timer);
    if (ms > 0 && !controller.signal.aborted) timer = setTimeout(() => controller.abort(new Error("stalled")), ms);
  };
  kick();
  return { signal: controller.signal, kick, dispose: () => timer && clearTimeout(timer) };
}

/**
 * Streams a source URL to a file, never whole in memory. Redirects are followed
 * by hand so every hop passes the guard. 4xx, refusals, redirect loops, names
 * that do not resolve, silence longer than `stallMs` and the overall timeout
 * are permanent; 5xx and other network errors are worth another attempt.
 */
export async function fetchSource(sourceUrl: string, dest: string, opts: FetchSourceOptions): Promise<number> {
  let url = new URL(sourceUrl);
  const maxRedirects = opts.maxRedirects ?? 5;
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const stall = stallTimer(opts.stallMs);
  const signal = AbortSignal.any([opts.signal, timeout, stall.signal]);
  const timedOut = () => {
    if (timeout.aborted) return new PermanentWorkError("SOURCE_FETCH_TIMEOUT", `Fetching the source timed out after ${opts.timeoutMs} ms.`);
    if (stall.signal.aborted) return new PermanentWorkError("SOURCE_FETCH_TIMEOUT", `The source sent nothing for ${opts.stallMs} ms.`);
    return null;
  };
  try {
    let res: Response | undefined;
    for (let hop = 0; ; hop++) {
      try {
        await opts.guard(url);
      } catch (err) {
        if (dnsMiss(err)) throw new PermanentWorkError("SOURCE_FETCH_FAILED", `The source host ${url.hostname} does not resolve.`);
        if (err instanceof OutboundRefusedError) throw new PermanentWorkError("SOURCE_URL_REFUSED", `The source URL is not allowed: ${err.message}`);
        throw new Error(`Cannot resolve the source host ${url.hostname}: ${(err as Error).message}`);
      }
      try {
        res = await fetch(url, { redirect: "manual", signal });
      } catch (err) {
        const late = timedOut();
        if (late) throw late;
        if (dnsMiss(err)) throw new PermanentWorkError("SOURCE_FETCH_FAILED", `The source host ${url.hostname} does not resolve.`);
        throw new Error(`Cannot fetch the source: ${(err as Error).message}`);
      }
      stall.kick();
      if (res.status < 300 || res.status >= 400) break;
      await res.body?.cancel().catch(() => undefined);
      const location = res.headers.get("location");
      if (!location) throw new PermanentWorkError("SOURCE_FETCH_FAILED", `The source answered HTTP ${res.status} without a Location.`);
      if (hop >= maxRedirects) throw new PermanentWorkError("SOURCE_FETCH_FAILED", `Too many redirects (more than ${maxRedirects}).`);
      try {
        url = new URL(location, url);
      } catch {
        throw new PermanentWorkError("SOURCE_FETCH_FAILED", "The source redirected to an invalid URL.");
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new PermanentWorkError("SOURCE_FETCH_FAILED", "The source redirected to a URL that is not http(s).");
    }
    if (res.status >= 400 && res.status < 500) throw new PermanentWorkError(res.status === 404 ? "SOURCE_NOT_FOUND" : "SOURCE_FETCH_FAILED", `The source answered HTTP ${res.status}.`);
    if (!res.ok || !res.body) throw new Error(`The source answered HTTP ${res.status}.`);
    const declared = Number(res.headers.get("content-length") ?? NaN);
    if (declared > opts.maxBytes) throw new PermanentWorkError("SOURCE_TOO_LARGE", `The source is larger than ${opts.maxBytes} bytes.`);

    const size = await writeBody(res.body, dest, opts.maxBytes, () => stall.kick(), timedOut);
    if (size === 0) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The source is empty.");
    return size;
  } finally {
    stall.dispose();
  }
}

/** Streams a response body into `dest` under the size limit; a partial file is removed (a stall or timeout says so). */
async function writeBody(body: ReadableStream<Uint8Array>, dest: string, maxBytes: number, kick: () => void, timedOut: () => Error | null): Promise<number> {
  const sink = Bun.file(dest).writer({ highWaterMark: 1024 * 1024 });
  let size = 0;
  try {
    for await (const chunk of body) {
      kick();
      size += chunk.byteLength;
      if (size > maxBytes) throw new PermanentWorkError("SOURCE_TOO_LARGE", `The source is larger than ${maxBytes} bytes.`);
      sink.write(chunk);
      await sink.flush();
    }
    await sink.end();
  } catch (err) {
    await Promise.resolve(sink.end()).catch(() => undefined);
    await rm(dest, { force: true });
    throw timedOut() ?? err;
  }
  return size;
}
