import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.js";

export interface VidliveClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** The service's origin, e.g. `https://video.example.com` (its BASE_URL); paths carry `/api/public/v1`. */
  baseUrl: string;
  /** An API key, `sk_live_<prefix>_<secret>`: sent as `Authorization: Bearer`. */
  apiKey: string;
}

/** The API, typed from the service's OpenAPI document: `client.GET("/api/public/v1/videos/")` → `{data, error, response}`. */
export type VidliveClient = Client<paths>;

/**
 * A client for every operation of the API (openapi-fetch over the generated
 * `paths`): request bodies, path and query parameters and each status's body
 * are typed; `data` is the success envelope, `error` the error envelope.
 */
export function createClient(options: VidliveClientOptions): VidliveClient {
  const { apiKey, baseUrl, headers, ...rest } = options;
  if (!apiKey) throw new TypeError("createClient: apiKey is required");
  return createFetchClient<paths>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ""),
    headers: { ...(headers as Record<string, string> | undefined), Authorization: `Bearer ${apiKey}` },
  });
}
