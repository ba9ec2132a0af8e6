import { ApiError } from "../http/api-error.ts";
import { payloadTooLarge, readBoundedBody } from "../http/bounded-body.ts";
import { clientAddress, clientAddressGroup } from "../http/client-address.ts";
import { errorResponse } from "../http/envelope.ts";
import type { RateLimiter } from "../http/rate-limiter.ts";
import { verifyPlaybackToken } from "../playback/playback-token.ts";
import type { AssetLookup, BeaconAsset } from "./asset-lookup.ts";
import { BEACON_MAX_BYTES, type BeaconEvent, parseBeacon } from "./beacon-input.ts";
import type { AcceptedGroup, BeaconWriter } from "./beacon-writer.ts";
import type { ViewerTraitsSource } from "./viewer-traits.ts";

export const BEACONS_PATH = "/beacons/";

const CORS = { "access-control-allow-origin": "*" };
const PREFLIGHT = { ...CORS, "access-control-allow-methods": "POST, OPTIONS", "access-control-allow-headers": "content-type", "access-control-max-age": "86400" };
/** Fatal: a body that is not UTF-8 is a 400 (one decoder: building one per request costs more than the decoding). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });
const NO_CONTENT = () => new Response(null, { status: 204, headers: CORS });
/** Verified (asset, token) pairs remembered: a player sends the same token with every batch. */
const TOKENS_CACHED = 10_000;
const TOKEN_TTL_MS = 60_000;

function refuse(err: ApiError): Response {
  const res = errorResponse(err);
  for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v);
  return res;
}

/**
 * `POST /beacons/` (issue 28): public, no key, no cookies, CORS `*`, any
 * content type (sendBeacon's `text/plain`). Counted per client address
 * first; a bad body is 400 (not JSON) or 422 (details per event) in the
 * envelope, 413 past 64 KB. Events naming an unknown or deleted asset, or a
 * signed asset without a valid playback token (`token`: the JWT its media
 * URLs take, `aud: v`), are dropped silently: the answer is 204 either way,
 * so beacons cannot probe which ids exist.
 */
export function createBeaconIntake(deps: {
  lookup: AssetLookup;
  writer: BeaconWriter;
  traits: ViewerTraitsSource;
  limiter: RateLimiter;
  trustProxy: () => number;
  perMinute: () => number;
  /** A signing key of the organization (src/playback signing-keys.ts `verifierOf`). */
  keyOf: (kid: string, orgId: string) => Promise<CryptoKey | null>;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  const verified = new Map<string, number>();

  async function tokenOk(e: BeaconEvent, asset: BeaconAsset): Promise<boolean> {
    if (!e.token) return false;
    const key = `${e.assetId} ${e.token}`;
    const until = verified.get(key);
    if (until !== undefined && until > now()) return true;
    const verdict = await verifyPlaybackToken(e.token, { assetId: e.assetId, aud: "v", keyOf: (kid) => deps.keyOf(kid, asset.orgId) });
    if (!verdict.ok) return false;
    if (verified.size >= TOKENS_CACHED) verified.clear();
    verified.set(key, now() + TOKEN_TTL_MS);
    return true;
  }

  return async function handle(request: Request, socketAddress: string | undefined): Promise<Response> {
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: PREFLIGHT });
    if (request.method !== "POST") return refuse(new ApiError("METHOD_NOT_ALLOWED", undefined, undefined, { allow: "POST, OPTIONS" }));
    const address = clientAddress(request, socketAddress, deps.trustProxy());
    const pending = deps.limiter.hit([{ key: `beacons:addr:${clientAddressGroup(request, socketAddress, deps.trustProxy())}`, limit: deps.perMinute() }]);
    const verdict = pending instanceof Promise ? await pending : pending;
    if (!verdict.ok) return refuse(new ApiError("RATE_LIMITED", undefined, undefined, { "retry-after": String(verdict.retryAfterSeconds) }));
    let text: string;
    try {
      text = UTF8.decode(await readBoundedBody(request, BEACON_MAX_BYTES));
    } catch (err) {
      if (err instanceof ApiError) return refuse(err);
      if (err instanceof TypeError) return refuse(new ApiError("BAD_REQUEST", "The body is not UTF-8.", { body: "is not valid UTF-8" }));
      throw err;
    }
    if (text.length > BEACON_MAX_BYTES) return refuse(payloadTooLarge(BEACON_MAX_BYTES));
    const parsed = parseBeacon(text);
    if (!parsed.ok) return refuse(parsed.status === 400 ? new ApiError("BAD_REQUEST", "The body is not JSON.", parsed.details) : ApiError.validation(parsed.details));
    const traits = deps.traits.of(address, request.headers.get("user-agent") ?? "");
    const receivedAt = now();
    // Events grouped by asset (a player's body names one): no object per event on the way to the writer.
    const groups = new Map<string, AcceptedGroup | null>();
    for (const event of parsed.events) {
      const key = `${event.assetKind}:${event.assetId}`;
      let group = groups.get(key);
      if (group === undefined) {
        const known = deps.lookup.peek(event.assetId, event.assetKind);
        const asset = known !== undefined ? known : await deps.lookup.of(event.assetId, event.assetKind);
        group = asset ? { asset, events: [] } : null;
        groups.set(key, group);
      }
      if (!group) continue;
      if (group.asset.signed && !(await tokenOk(event, group.asset))) continue;
      group.events.push(event);
    }
    for (const group of groups.values()) if (group && group.events.length > 0) deps.writer.add({ ...group, traits, receivedAt });
    return NO_CONTENT();
  };
}

export type BeaconIntake = ReturnType<typeof createBeaconIntake>;
