import { ApiError } from "./api-error.ts";

const EMPTY = new Uint8Array(0);

/** 413 PAYLOAD_TOO_LARGE for a body over `limit` bytes (`details.body` names the limit). */
export function payloadTooLarge(limit: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `The request body exceeds this route's limit of ${limit} bytes.`, { body: `must be at most ${limit} bytes` });
}

/**
 * The one way a route reads a body into memory (issue 23): at most `limit`
 * bytes, counted while they arrive, so a body without `Content-Length`
 * (chunked) costs the service `limit` bytes at most, never its whole size.
 * A declared length over the limit is refused before a byte is read; a
 * stream that crosses it is cancelled there. Both throw 413
 * PAYLOAD_TOO_LARGE (`payloadTooLarge`). Limits per route family:
 * src/http/route-limits.ts `BODY_LIMITS`.
 */
export async function readBoundedBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= limit)) throw payloadTooLarge(limit);
  const body = request.body;
  if (!body) return EMPTY;
  // A declared length within the limit bounds the read by itself (Bun frames the body by it and refuses a request
  // that also says Transfer-Encoding): one read, the fast path of every JSON API call.
  if (declared !== null && !request.headers.has("transfer-encoding")) return new Uint8Array(await request.arrayBuffer());
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // The rest is never read: the answer goes out, the connection drops what the client still sends.
      reader.cancel().catch(() => undefined);
      throw payloadTooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const utf8 = new TextDecoder("utf-8");

/** `readBoundedBody` as text (UTF-8, malformed bytes replaced). */
export async function readBoundedText(request: Request, limit: number): Promise<string> {
  return utf8.decode(await readBoundedBody(request, limit));
}
