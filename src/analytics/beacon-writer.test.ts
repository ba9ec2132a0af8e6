/**
 * The beacon writer against real databases (a file, and a real sqld for a
 * database that stops answering): what it accepted is stored at a stop,
 * a failed group commit is retried until it lands, and a commit sent again
 * after its answer was lost stores nothing twice.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSqld, type Sqld } from "../../test/support/sqld.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { silentLogger } from "../log.ts";
import type { BeaconEvent } from "./beacon-input.ts";
import { createBeaconStore } from "./beacon-store.ts";
import { type AcceptedBody, createBeaconWriter } from "./beacon-writer.ts";

setDefaultTimeout(120_000);

const asset = { orgId: "org_w", kind: "video" as const, signed: false };
const traits = { country: "GB", browser: "Chrome", os: "Linux", deviceType: "desktop" };

/** A player's body: `n` events of one view. */
function body(view: number, n: number, receivedAt: number): AcceptedBody {
  const events: BeaconEvent[] = Array.from({ length: n }, (_, i) => ({
    viewId: `view-${view}`,
    viewerId: `viewer-${view}`,
    assetId: "vid_writer",
    assetKind: "video",
    type: i === 0 ? "viewstart" : "heartbeat",
    t: receivedAt + i,
    playerTime: i,
    height: null,
    bitrate: null,
    code: null,
    startupMs: null,
    token: null,
  }));
  return { asset, traits, receivedAt, events };
}

async function stored(database: Database): Promise<{ events: number; rows: number; views: number }> {
  const r = await database.client.execute("SELECT coalesce(sum(json_array_length(events)), 0) AS events, count(*) AS rows FROM analytics_event_batches");
  const v = await database.client.execute("SELECT count(*) AS n FROM analytics_views");
  return { events: Number(r.rows[0]!.events), rows: Number(r.rows[0]!.rows), views: Number(v.rows[0]!.n) };
}

describe("beacon writer on a database file (its writes on a worker thread)", () => {
  let dir: string;
  let database: Database;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "beacon-writer-"));
    database = await createDatabase({ url: `file:${join(dir, "db.sqlite")}` });
  });
  afterAll(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a stop stores every event accepted before it, one row per body and view; events after it are refused", async () => {
    const writer = createBeaconWriter({ store: createBeaconStore({ database, timeoutMs: 10_000, logger: silentLogger }), logger: silentLogger });
    const now = Date.now();
    for (let i = 0; i < 300; i++) expect(writer.add(body(i % 30, 10, now + i))).toBe(0);
    await writer.stop();
    expect(writer.waiting).toBe(0);
    expect(await stored(database)).toEqual({ events: 3000, rows: 300, views: 30 });
    expect(writer.add(body(1, 10, now))).toBe(10);
    expect(writer.dropped).toBe(10);
  });

  test("a group commit sent again after its answer was lost stores nothing twice; another commit stores", async () => {
    const store = createBeaconStore({ database, timeoutMs: 10_000, logger: silentLogger });
    const before = await stored(database);
    const write = { id: "write-once", at: Date.now(), batches: JSON.stringify([["vid_writer", "view-dup", 1, 1, [["heartbeat", 1, 0, null, null, null, null]]]]), views: "[]" };
    await store.write(write);
    await store.write(write);
    expect((await stored(database)).events).toBe(before.events + 1);
    await store.write({ ...write, id: "write-twice" });
    expect((await stored(database)).events).toBe(before.events + 2);
    await store.close();
  });
});

describe("beacon writer on a libSQL server that stops answering", () => {
  let sqld: Sqld;
  let database: Database;
  beforeAll(async () => {
    sqld = await startSqld();
    database = await createDatabase({ url: sqld.url, timeoutMs: 1_000 });
  });
  afterAll(async () => {
    process.kill(sqld.pid, "SIGCONT");
    database.close();
    await sqld.stop();
  });

  test("a failed write is retried until the server answers again: every accepted event stored exactly once", async () => {
    const writer = createBeaconWriter({ store: createBeaconStore({ database, timeoutMs: 1_000, logger: silentLogger }), logger: silentLogger });
    const now = Date.now();
    process.kill(sqld.pid, "SIGSTOP");
    try {
      for (let i = 0; i < 50; i++) expect(writer.add(body(i % 5, 10, now + i))).toBe(0);
      const deadline = Date.now() + 60_000;
      while (writer.failures < 2 && Date.now() < deadline) await Bun.sleep(100);
      expect(writer.failures).toBeGreaterThanOrEqual(2);
      expect(writer.waiting).toBe(500);
    } finally {
      process.kill(sqld.pid, "SIGCONT");
    }
    await writer.flush();
    expect(writer.waiting).toBe(0);
    expect(await stored(database)).toEqual({ events: 500, rows: 50, views: 5 });
    await writer.stop();
  });
});
