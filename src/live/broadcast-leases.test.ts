import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../db/create-database.ts";
import { broadcasts } from "../db/schema/index.ts";
import { createBroadcastLeases } from "./broadcast-leases.ts";

setDefaultTimeout(120_000);

/** Broadcast leases on a database file; the race between two takers runs in two real processes. */

let dir: string | undefined;
const toClose: Database[] = [];
afterEach(() => {
  for (const d of toClose.splice(0)) d.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function open() {
  dir = mkdtempSync(join(tmpdir(), "broadcast-leases-"));
  const path = join(dir, "t.db");
  const database = await createDatabase({ url: `file:${path}` });
  toClose.push(database);
  return { path, database };
}

const lapsed = (streamId: string, now = Date.now()) => ({ streamId, orgId: "org_race", claimedBy: "proc-dead", leaseUntil: now - 1_000, startedAt: now - 60_000, leftAt: null });

describe("broadcast leases", () => {
  test("a live lease of another process is refused; a lapsed one is taken over (its start kept), once: the next taker finds it alive", async () => {
    const { database } = await open();
    const a = createBroadcastLeases({ database, holder: "proc-a", leaseMs: 60_000 });
    const b = createBroadcastLeases({ database, holder: "proc-b", leaseMs: 60_000 });
    const row = lapsed("ls_1");
    await database.write((tx) => tx.insert(broadcasts).values(row));

    const first = await database.write((tx) => a.acquire(tx, "ls_1", "org_race"));
    expect(first.ok).toBe(true);
    expect(first.takenFrom).toEqual(row);
    expect(first.lease).toMatchObject({ claimedBy: "proc-a", startedAt: row.startedAt, leftAt: null });
    const second = await database.write((tx) => b.acquire(tx, "ls_1", "org_race"));
    expect(second).toEqual({ ok: false, lease: { ...first.lease } });
    // The owner itself keeps it (a reconnect to the same process): no take-over.
    const again = await database.write((tx) => a.acquire(tx, "ls_1", "org_race"));
    expect(again.ok).toBe(true);
    expect(again.takenFrom).toBeUndefined();
  });

  test("two processes racing for the same lapsed leases: each lease is won by exactly one (compare-and-set on holder and expiry)", async () => {
    const { path, database } = await open();
    const ids = Array.from({ length: 30 }, (_, i) => `ls_race_${i}`);
    const now = Date.now();
    await database.write((tx) => tx.insert(broadcasts).values(ids.map((id) => lapsed(id, now))));
    const startAt = Date.now() + 1_500;
    const fixture = join(import.meta.dir, "broadcast-lease-race.fixture.ts");
    const procs = ["proc_1", "proc_2"].map((h) => Bun.spawn([process.execPath, fixture, path, h, String(startAt), ids.join(",")], { stdout: "pipe", stderr: "inherit" }));
    const outs = await Promise.all(procs.map(async (proc) => ((await proc.exited) === 0 ? (JSON.parse(await new Response(proc.stdout).text()) as string[]) : null)));
    expect(outs.every((o) => o !== null)).toBe(true);
    const [one, two] = outs as [string[], string[]];
    expect(one.filter((id) => two.includes(id))).toEqual([]);
    expect([...one, ...two].sort()).toEqual([...ids].sort());
    const rows = await database.db.select().from(broadcasts);
    for (const r of rows) expect(r.claimedBy).toBe(one.includes(r.streamId) ? "proc_1" : "proc_2");
  });
});
