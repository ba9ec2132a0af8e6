import { waitFor } from "./events.ts";
import type { TestService } from "./test-service.ts";
import { ok } from "./api.ts";

/** Reads a stream through the API (`data.stream`, or undefined for a 404). */
export async function getStream(t: TestService, id: string) {
  return (await ok(t.api(`/livestreams/${id}/`), "getLivestream")).data?.stream;
}

/** Polls GET /livestreams/{id}/ until the stream is in one of `statuses`; resolves with it. */
export function streamIn(t: TestService, id: string, statuses: string[], timeoutMs = 30_000) {
  return waitFor(
    async () => {
      const s = await getStream(t, id);
      return statuses.includes(s?.status) ? s : undefined;
    },
    { timeoutMs, what: `stream ${id} in ${statuses}` },
  );
}
