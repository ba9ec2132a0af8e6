import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../config.ts";
import { silentLogger } from "../log.ts";
import { createService, type Service } from "../service.ts";
import { subscribedEvents } from "./subscribed-events.ts";

setDefaultTimeout(120_000);

/**
 * Events nobody subscribes to are written already fanned out (no second write
 * transaction for the dispatcher); subscribed ones wait for the fan-out. The
 * service is created but not started: no dispatcher runs, so what the outbox
 * holds is what the creating transaction wrote.
 */
let dir: string;
let service: Service;
let org: Awaited<ReturnType<Service["orgs"]["createOrg"]>>["org"];
let other: typeof org;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "subscribed-"));
  service = await createService(loadConfig({ DATA_DIR: dir, PORT: "0", RTMP_PORT: "0", LOG_LEVEL: "silent", ALLOW_PRIVATE_NETWORK: "1" }), { logger: silentLogger, transcriber: null });
  org = (await service.orgs.createOrg("subscriber")).org;
  other = (await service.orgs.createOrg("other")).org;
});

afterAll(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

const outboxOf = async (entityId: string) => (await service.outbox.readAfter(0, { limit: 1000 })).filter((r) => r.entityId === entityId);

test("the subscribed events are those of the organization's live endpoints only", async () => {
  const a = await service.webhooks.endpoints.create(org.id, { url: "https://127.0.0.1:9/a", events: ["LIVESTREAM_SCHEDULED", "VIDEO_UPLOADED"], fields: [], description: null });
  await service.webhooks.endpoints.create(other.id, { url: "https://127.0.0.1:9/b", events: ["LIVESTREAM_ENDED"], fields: [], description: null });
  const gone = await service.webhooks.endpoints.create(org.id, { url: "https://127.0.0.1:9/c", events: ["LIVESTREAM_STARTED"], fields: [], description: null });
  await service.webhooks.endpoints.remove(org.id, gone.row.id);
  const heard = await service.database.write((tx) => subscribedEvents(tx, org.id));
  expect([...heard].sort()).toEqual(["LIVESTREAM_SCHEDULED", "VIDEO_UPLOADED"]);
  await service.webhooks.endpoints.remove(org.id, a.row.id);
  expect([...(await service.database.write((tx) => subscribedEvents(tx, org.id)))]).toEqual([]);
});

test("an event nobody subscribes to is written fanned out; a subscribed one waits for the fan-out", async () => {
  const quiet = await service.live.livestreams.create(other, { title: "nobody listens to its creation event here" } as never);
  const [q] = await outboxOf(quiet.id);
  expect(q?.event).toBe("LIVESTREAM_SCHEDULED"); // a stream's creation event (spec)
  expect(q?.fannedOutAt).not.toBeNull();

  await service.webhooks.endpoints.create(org.id, { url: "https://127.0.0.1:9/d", events: ["LIVESTREAM_SCHEDULED"], fields: [], description: null });
  const heard = await service.live.livestreams.create(org, { title: "an endpoint listens" } as never);
  const [h] = await outboxOf(heard.id);
  expect(h?.event).toBe("LIVESTREAM_SCHEDULED");
  expect(h?.fannedOutAt).toBeNull();
});
