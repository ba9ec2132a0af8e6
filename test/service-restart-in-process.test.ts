import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

// Embedding the service (tests, a host process) stops and starts it on the same DATA_DIR: the stopped one must leave no
// lock behind. Its write queue was closed with a transaction in flight, and that connection kept the file's write lock
// until the garbage collector got to it (SQLITE_BUSY on the next start).
test("a service stopped and started again in the same process on the same DATA_DIR takes writes at once", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "restart-"));
  try {
    for (let round = 0; round < 2; round++) {
      const first = await startTestService({ dataDir });
      const org = { orgId: first.orgId, apiKey: first.apiKey };
      // A beacon stored by the beacon store's own connection (a worker thread): stopping closes it after its last write.
      const created = await first.api("/livestreams/", { method: "POST", json: { title: `watched ${round}` } });
      const streamId = ((await created.json()) as { data: { stream: { id: string } } }).data.stream.id;
      const viewed = [{ stream_id: streamId, view_id: `restart-${round}`, viewer_id: "restart", type: "viewstart", t: Date.now(), player_time: 0 }];
      expect((await fetch(`${first.base}/beacons/`, { method: "POST", body: JSON.stringify(viewed) })).status).toBe(204);
      await first.stop({ cleanup: false });
      const again = await startTestService({ dataDir, org });
      expect((await again.api("/livestreams/", { method: "POST", json: { title: `round ${round}` } })).status).toBe(201);
      const stored = await again.service.database.client.execute({ sql: "SELECT count(*) AS n FROM analytics_event_batches WHERE view_id = ?", args: [`restart-${round}`] });
      expect(Number(stored.rows[0]!.n)).toBe(1);
      await again.stop({ cleanup: false });
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
