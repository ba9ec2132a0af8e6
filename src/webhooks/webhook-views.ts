import type { AttemptOutcome } from "./deliver.ts";
import type { AttemptRow, DeliveryRow } from "./delivery-store.ts";

/** The JSON views of deliveries and attempts (their schemas: webhook-schemas.ts). */

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function attemptView(a: AttemptRow) {
  return { started_at: iso(a.startedAt), status_code: a.statusCode, duration_ms: a.durationMs, error: a.error, manual: a.manual };
}

export function deliveryView(d: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: d.id,
    event: d.event,
    status: d.status.toUpperCase(),
    test: d.test,
    created_at: iso(d.createdAt),
    next_attempt_at: d.status === "pending" ? iso(d.nextAttemptAt) : null,
    attempts: attempts.map(attemptView),
  };
}

export function outcomeView(o: AttemptOutcome | null) {
  return o ? { started_at: iso(o.startedAt), status_code: o.statusCode, duration_ms: o.durationMs, error: o.error } : null;
}
