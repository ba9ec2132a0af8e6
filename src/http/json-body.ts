import { ApiError } from "./api-error.ts";
import { readBoundedBody } from "./bounded-body.ts";
import { BODY_LIMITS } from "./route-limits.ts";

/** Deepest nesting of arrays and objects a JSON body may have. The deepest valid input of the API is 2 (tags). */
export const MAX_JSON_DEPTH = 32;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The deepest nesting of `[`/`{` outside strings, stopping as soon as it passes
 * `limit`: one linear pass over the bytes, no allocation. Multi-byte UTF-8
 * sequences never contain ASCII bytes, so scanning bytes is exact.
 */
export function exceedsDepth(bytes: Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
  }
  return false;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads (at most `limit` bytes, counted while read: 413 past it) and parses a
 * JSON body. A body nested deeper than MAX_JSON_DEPTH is refused before
 * JSON.parse sees it: deep nesting costs parsers, validators and serialisers
 * time and stack for no input this API takes. An empty body is `null` (no body).
 */
export async function readJsonBody(request: Request, limit: number = BODY_LIMITS.apiJson): Promise<unknown> {
  const bytes = await readBoundedBody(request, limit);
  if (bytes.length === 0) return null;
  if (exceedsDepth(bytes)) throw ApiError.validation({ body: `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep` });
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw ApiError.validation({ body: "is not valid UTF-8" });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw ApiError.validation({ body: "is not valid JSON" });
  }
}
