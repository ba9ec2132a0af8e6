import type { Logger } from "../log.ts";
import type { AttemptOutcome, Deliver } from "./deliver.ts";
import type { DeliveryRow } from "./delivery-store.ts";
import type { SendableEndpoint } from "./endpoint-store.ts";

const failed = (error: string): AttemptOutcome => ({ ok: false, startedAt: Date.now(), durationMs: 0, statusCode: null, error, aborted: false });

/**
 * One attempt of a delivery to its endpoint: signed and sent, or failed at
 * once when the endpoint's secret no longer opens. The promise never rejects:
 * whatever goes wrong is a failed attempt, retried on the schedule.
 */
export function createAttempter(opts: { deliver: Deliver; log: Logger }) {
  const { deliver, log } = opts;
  const unreadableSecrets = new Set<string>();

  /** An endpoint whose sealed secret no longer opens: nothing is sent, the attempt fails (and is retried, then abandoned). */
  async function unsignable(endpoint: SendableEndpoint): Promise<AttemptOutcome> {
    if (!unreadableSecrets.has(endpoint.id)) {
      unreadableSecrets.add(endpoint.id);
      log.error("Cannot sign webhook deliveries: the endpoint's signing secret does not open (was SECRET_KEY changed?)", { endpoint_id: endpoint.id, org_id: endpoint.orgId });
    }
    return failed("Cannot sign: the signing secret is unreadable");
  }

  return function attempt(row: DeliveryRow, endpoint: SendableEndpoint, signal: AbortSignal): Promise<AttemptOutcome> {
    const sent = endpoint.secret === null ? unsignable(endpoint) : deliver({ url: endpoint.url, secret: endpoint.secret, event: row.event, deliveryId: row.id, body: row.body }, signal);
    return sent.catch((err): AttemptOutcome => {
      log.error("Cannot deliver a webhook", { err, delivery_id: row.id, endpoint_id: row.endpointId, org_id: row.orgId });
      return failed("Internal error while sending");
    });
  };
}

export type Attempt = ReturnType<typeof createAttempter>;
