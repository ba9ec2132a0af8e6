import type { Service } from "../../src/service.ts";

/** The domain events an entity wrote to the outbox, oldest first (src/outbox; payloads opened). */
export async function outboxEvents(service: Service, entityId: string): Promise<Array<{ event: string; data: any }>> {
  return (await service.outbox.ofEntity(entityId)).map((e) => ({ event: e.event, data: e.data }));
}
/** Polls until `check` returns a value (not undefined/false) or the time is up. */
/** Polls `read` until `ok` holds of its value, and answers that value; fails with the last value read after `ms`. */
export async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  let last: T | undefined;
  const hit = await waitFor(
    async () => {
      last = await read();
      return ok(last) ? { value: last } : undefined;
    },
    { timeoutMs: ms, intervalMs: 10 },
  ).catch(() => {
    throw new Error(`Condition not met in ${ms} ms; last value: ${JSON.stringify(last)}`);
  });
  return hit.value;
}

export async function waitFor<T>(check: () => Promise<T | undefined | false | null>, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined && v !== false && v !== null) return v as T;
    } catch (err) {
      last = err;
    }
    await Bun.sleep(opts.intervalMs ?? 100);
  }
  throw new Error(`Timed out waiting for ${opts.what ?? "condition"}${last ? `: ${String(last)}` : ""}`);
}
