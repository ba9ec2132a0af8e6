import type { OutboundGuard } from "../net/outbound-guard.ts";
import { OutboundRefusedError } from "../net/outbound-guard.ts";
import { signatureHeader } from "./sign.ts";

export interface DeliveryRequest {
  url: string;
  secret: string;
  event: string;
  deliveryId: string;
  /** The exact bytes stored with the delivery. */
  body: string;
}

export interface AttemptOutcome {
  ok: boolean;
  startedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  /** Cut short by the caller (shutdown), not by the receiver: not a real attempt. */
  aborted: boolean;
  /** Failed because no complete answer came within the timeout (the `timeout` outcome of the metrics). */
  timedOut?: boolean;
}

/** Enough of a response body to let the connection be reused; the rest is not read. */
const DRAIN_LIMIT = 64 * 1024;

async function drain(res: Response): Promise<void> {
  if (!res.body) return;
  const reader = res.body.getReader();
  let read = 0;
  while (read <= DRAIN_LIMIT) {
    const { done, value } = await reader.read();
    if (done) return;
    read += value.byteLength;
  }
  await reader.cancel();
}

/**
 * Makes one signed POST (spec 6.1): any 2xx acknowledges; anything else, a
 * network error, a refused address or no complete answer within `timeoutMs`
 * is a failure. Redirects are not followed. Never throws.
 */
export function createDeliverer(opts: { guard: OutboundGuard; timeoutMs: number; ca?: string[]; userAgent?: string }) {
  const tls = opts.ca ? { ca: opts.ca } : undefined;
  return async function deliver(req: DeliveryRequest, stop?: AbortSignal): Promise<AttemptOutcome> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const signal = stop ? AbortSignal.any([timeout, stop]) : timeout;
    const outcome = (statusCode: number | null, error: string | null): AttemptOutcome => ({
      ok: error === null,
      startedAt,
      durationMs: Math.round(performance.now() - t0),
      statusCode,
      error,
      aborted: !!stop?.aborted && !timeout.aborted,
      timedOut: error !== null && timeout.aborted,
    });
    try {
      const res = await opts.guard.fetch(req.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": opts.userAgent ?? "vidlive-webhooks/1",
          "x-service-event": req.event,
          "x-service-delivery": req.deliveryId,
          "x-service-signature": signatureHeader(req.secret, req.body, Date.now() / 1000),
        },
        body: req.body,
        signal,
        maxRedirects: 0,
        ...(tls ? { tls } : {}),
      } as RequestInit & { maxRedirects: number });
      // The status is the answer; a body that trickles in afterwards does not turn a 2xx into a failure.
      await drain(res).catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return outcome(res.status, null);
      if (res.status >= 300 && res.status < 400) return outcome(res.status, `HTTP ${res.status}: redirects are not followed`);
      return outcome(res.status, `HTTP ${res.status}`);
    } catch (err) {
      if (timeout.aborted) return outcome(null, `No response within ${opts.timeoutMs} ms`);
      if (err instanceof OutboundRefusedError) return outcome(null, err.message);
      return outcome(null, `Network error: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}

export type Deliver = ReturnType<typeof createDeliverer>;
