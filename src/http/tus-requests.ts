import { API_PREFIX } from "./api-context.ts";

/**
 * Resumable uploads (tus, src/videos/tus-uploads.ts) live under the API
 * prefix but are not JSON: their bodies are the file's bytes, and a browser
 * may hold a presigned token (`?token=`, from POST /videos/upload-url/)
 * instead of the API key. The app's onRequest hook asks these two questions.
 */
export const TUS_PATH = `${API_PREFIX}/videos/uploads`;

const TUS_CHILD = `${TUS_PATH}/`;

export const isTusPath = (path: string) => path === TUS_PATH || path.startsWith(TUS_CHILD);

/**
 * A CORS preflight (browsers send no credentials on it), or a request with a
 * presigned token and no key: the tus route authorizes it itself. A request
 * that carries a key is authenticated by the key, as everywhere else.
 */
export function tusWithoutKey(request: Request): boolean {
  if (request.method === "OPTIONS") return true;
  if (request.headers.has("authorization") || request.headers.has("x-api-key")) return false;
  return new URL(request.url).searchParams.has("token");
}
