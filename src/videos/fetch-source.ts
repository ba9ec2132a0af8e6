import { rm } from "node:fs/promises";
import { PermanentJobError } from "../jobs/job-runner.ts";

export interface FetchSourceOptions {
  signal: AbortSignal;
  maxBytes: number;
  timeoutMs: number;
  /** Refuses private, loopback and link-local destinations (SSRF), unless allowed by config. */
  guard: (url: URL) => Promise<void>;
}

/**
 * Streams a source URL to a file, never whole in memory. Redirects are followed
 * by hand so every hop passes the guard. 4xx and refusals are permanent; 5xx
 * and network errors are worth another attempt.
 */
export async function fetchSource(sourceUrl: string, dest: string, opts: FetchSourceOptions): Promise<number> {
  let url = new URL(sourceUrl);
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = AbortSignal.any([opts.signal, timeout]);
  let res: Response | undefined;
  for (let hop = 0; hop < 5; hop++) {
    try {
      await opts.guard(url);
    } catch (err) {
      throw new PermanentJobError("SOURCE_URL_REFUSED", `The source URL is not allowed: ${(err as Error).message}`);
    }
    try {
      res = await fetch(url, { redirect: "manual", signal });
    } catch (err) {
      if (timeout.aborted) throw new PermanentJobError("SOURCE_FETCH_TIMEOUT", `Fetching the source timed out after ${opts.timeoutMs} ms.`);
      throw new Error(`Cannot fetch the source: ${(err as Error).message}`);
    }
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url);
      continue;
    }
    break;
  }
  if (!res) throw new PermanentJobError("SOURCE_FETCH_FAILED", "Too many redirects.");
  if (res.status >= 400 && res.status < 500) throw new PermanentJobError(res.status === 404 ? "SOURCE_NOT_FOUND" : "SOURCE_FETCH_FAILED", `The source answered HTTP ${res.status}.`);
  if (!res.ok || !res.body) throw new Error(`The source answered HTTP ${res.status}.`);
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (declared > opts.maxBytes) throw new PermanentJobError("SOURCE_TOO_LARGE", `The source is larger than ${opts.maxBytes} bytes.`);

  const sink = Bun.file(dest).writer({ highWaterMark: 1024 * 1024 });
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += chunk.byteLength;
      if (size > opts.maxBytes) throw new PermanentJobError("SOURCE_TOO_LARGE", `The source is larger than ${opts.maxBytes} bytes.`);
      sink.write(chunk);
      await sink.flush();
    }
    await sink.end();
  } catch (err) {
    await Promise.resolve(sink.end()).catch(() => undefined);
    await rm(dest, { force: true });
    if (timeout.aborted) throw new PermanentJobError("SOURCE_FETCH_TIMEOUT", `Fetching the source timed out after ${opts.timeoutMs} ms.`);
    throw err;
  }
  if (size === 0) throw new PermanentJobError("INPUT_UNSUPPORTED", "The source is empty.");
  return size;
}
