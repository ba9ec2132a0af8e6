import type { EndpointStore, SendableEndpoint } from "./endpoint-store.ts";

/**
 * The endpoints the dispatcher sends to, secrets opened, as the store last
 * gave them. An endpoint deleted while this process runs never comes back,
 * even from a fan-out or a lookup that was under way when it was deleted.
 */
export function createEndpointCache(endpoints: Pick<EndpointStore, "sendableByIds">) {
  const byId = new Map<string, SendableEndpoint>();
  const removed = new Set<string>();

  function add(found: readonly SendableEndpoint[]): void {
    for (const ep of found) if (!removed.has(ep.id)) byId.set(ep.id, ep);
  }

  return {
    get(id: string): SendableEndpoint | undefined {
      return byId.get(id);
    },

    has(id: string): boolean {
      return byId.has(id);
    },

    isRemoved(id: string): boolean {
      return removed.has(id);
    },

    /** Endpoints the store has just given (a fan-out's active endpoints). */
    add,

    /** Looks up those of `ids` not known yet. */
    async ensure(ids: string[]): Promise<void> {
      const missing = [...new Set(ids)].filter((id) => !byId.has(id) && !removed.has(id));
      add(await endpoints.sendableByIds(missing));
    },

    /** The endpoint was deleted: never sent to again by this process. */
    remove(id: string): void {
      removed.add(id);
      byId.delete(id);
    },
  };
}

export type EndpointCache = ReturnType<typeof createEndpointCache>;
