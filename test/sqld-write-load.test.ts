import { afterAll, beforeAll, expect, test } from "bun:test";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import { createOrgStore } from "../src/orgs/org-store.ts";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { startFileServer } from "./support/file-server.ts";
import { longestGap, runRegistrationLoad } from "./support/registration-load.ts";

/**
 * Issue 24, item 3: sqld keeps taking writes with several processes. Three
 * service processes on one sqld (as test/support/sqld.ts runs it, see
 * docs/scaling.md) and one bucket; an organization with a high video limit;
 * 16 clients register failing sources (the origin answers 404) over the three
 * ports for 3 minutes, each registration a write and each failure a few more.
 * A probe outside the services writes once a second through its own queue.
 *
 * Writes keep completing: the probe's writes land (never 30 s without one),
 * registrations succeed all along, and each process registers at the end.
 * The processes reach sqld over ws://, as bench/sqld-writes.ts did when it
 * caught the stall beside a busy machine (load average 40-56): with sqld's
 * default WAL (VIDLIVE_SQLD_WAL=sqlite) this test failed there on 2026-11-27
 * (no probe write for 78 s, no registration for 78 s; the bench: 150 s), and
 * it passes on libsql-wal, which the tests and docs/scaling.md run. On a
 * quiet machine the default WAL often survives the 3 minutes (timing-dependent).
 */

const LOAD_MS = Number(process.env.SQLD_LOAD_MS ?? 180_000);
/**
 * A stall is minutes without a write. The probe writes straight to sqld, so
 * its gaps measure sqld alone; registrations go through the services, whose
 * bounds answer 503 when this machine (2 cores, load average 30+ from other
 * work) is slower than they allow, so theirs get more room.
 */
const MAX_PROBE_GAP_MS = 30_000;
const MAX_REGISTRATION_GAP_MS = 90_000;

let cluster: Cluster;
let database: Database;
const origin = startFileServer();

beforeAll(async () => {
  cluster = await startCluster({ name: "sqld-load" });
  // Over ws:// as bench/sqld-writes.ts ran when it caught the stall beside a busy machine (SQLD_LOAD_URL=http for HTTP).
  const env: Record<string, string> = process.env.SQLD_LOAD_URL === "http" ? {} : { DATABASE_URL: cluster.sqld.wsUrl };
  const first = await cluster.spawn(env);
  database = await createDatabase({ url: cluster.sqld.url });
  await createOrgStore(database).updateSettings(first.orgId, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 10_000_000, videosCreatePerMinute: 10_000_000 } }));
  await cluster.spawn(env);
  await cluster.spawn(env);
}, 120_000);

afterAll(async () => {
  database?.close();
  await cluster?.stop();
  origin.stop();
}, 60_000);

test(
  "three processes under a write-heavy load for 3 minutes: writes keep completing",
  async () => {
    await database.client.execute("CREATE TABLE IF NOT EXISTS load_probe (at INTEGER)");
    const start = performance.now();
    let stop = false;
    const probeTimes: number[] = [];
    const probeFailures: string[] = [];
    const probe = (async () => {
      while (!stop) {
        try {
          await database.write((tx) => tx.run(`INSERT INTO load_probe VALUES (${Date.now()})` as never));
          probeTimes.push(performance.now());
        } catch (err) {
          probeFailures.push(String(err));
        }
        await Bun.sleep(1000);
      }
    })();
    const stats = await runRegistrationLoad({
      children: () => cluster.children,
      source: (i) => origin.url(`missing-${i}.mp4`),
      clients: 16,
      total: 1_000_000,
      untilMs: LOAD_MS,
    });
    stop = true;
    await probe;
    const end = performance.now();
    const summary = {
      registered: stats.registered.length,
      statuses: Object.fromEntries([...(stats.statuses.get("all") ?? new Map())]),
      longestRegistrationGapMs: Math.round(longestGap(stats.okTimes, start, end)),
      longestProbeGapMs: Math.round(longestGap(probeTimes, start, end)),
      probeFailures: probeFailures.length,
    };
    console.log("sqld write load:", JSON.stringify(summary));
    expect(stats.registered.length).toBeGreaterThan(100);
    expect(summary.longestProbeGapMs).toBeLessThan(MAX_PROBE_GAP_MS);
    expect(summary.longestRegistrationGapMs).toBeLessThan(MAX_REGISTRATION_GAP_MS);
    // Still taking writes at the end: one more registration through each process.
    for (const child of cluster.children) {
      const res = await child.api("/videos/", { method: "POST", json: { source_url: origin.url(`after-${child.port}.mp4`), title: "after" }, signal: AbortSignal.timeout(30_000) });
      expect(res.status).toBe(201);
    }
  },
  LOAD_MS + 120_000,
);
