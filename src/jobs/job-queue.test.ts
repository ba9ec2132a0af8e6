import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../db/create-database.ts";
import { jobTurns, jobs } from "../db/schema/index.ts";
import { createJobQueue } from "./job-queue.ts";

const dir = mkdtempSync(join(tmpdir(), "jobq-"));
const database: Database = await createDatabase({ url: `file:${join(dir, "q.db")}` });
afterAll(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await database.write(async (tx) => {
    await tx.delete(jobs);
    await tx.delete(jobTurns);
  });
});

let clock = 1_000_000;
const now = () => clock;
const queue = createJobQueue({ database, workerId: "w1", leaseMs: 60_000, now });

async function enqueue(type: string, orgId: string, entityId: string) {
  clock += 1;
  await database.write((tx) => queue.enqueue(tx, { type, orgId, entityId, payload: {} }));
}

describe("claims are fair between organizations", () => {
  test.each(["transcode", "fetch-source"])("one %s slot: org A's long queue does not make org B wait for it to drain (round-robin)", async (type) => {
    for (let i = 1; i <= 5; i++) await enqueue(type, "org_A", `A${i}`);
    await enqueue(type, "org_B", "B1");
    await enqueue(type, "org_C", "C1");
    const order: string[] = [];
    for (;;) {
      clock += 10;
      const job = await queue.claim(type, { perOrgLimit: 4 });
      if (!job) break;
      order.push(job.entityId);
      await queue.finish(job.id, "done");
    }
    // FIFO would be A1..A5, B1, C1.
    expect(order).toEqual(["A1", "B1", "C1", "A2", "A3", "A4", "A5"]);
  });

  test("the organization with fewer jobs running goes first; within one organization, oldest first", async () => {
    for (let i = 1; i <= 4; i++) await enqueue("transcode", "org_A", `A${i}`);
    await enqueue("transcode", "org_B", "B1");
    await enqueue("transcode", "org_B", "B2");
    const held: string[] = [];
    for (let i = 0; i < 4; i++) held.push((await queue.claim("transcode"))!.entityId);
    expect(held).toEqual(["A1", "B1", "A2", "B2"]);
  });

  test("a per-organization limit caps one organization's running jobs; other organizations still get theirs", async () => {
    for (let i = 1; i <= 6; i++) await enqueue("fetch-source", "org_A", `A${i}`);
    const a = [await queue.claim("fetch-source", { perOrgLimit: 2 }), await queue.claim("fetch-source", { perOrgLimit: 2 })];
    expect(a.map((j) => j?.entityId)).toEqual(["A1", "A2"]);
    expect(await queue.claim("fetch-source", { perOrgLimit: 2 })).toBeNull();
    await enqueue("fetch-source", "org_B", "B1");
    expect((await queue.claim("fetch-source", { perOrgLimit: 2 }))?.entityId).toBe("B1");
    await queue.finish(a[0]!.id, "done");
    expect((await queue.claim("fetch-source", { perOrgLimit: 2 }))?.entityId).toBe("A3");
  });

  test("types are separate: a running fetch does not count against the organization's transcodes", async () => {
    await enqueue("fetch-source", "org_A", "F1");
    await enqueue("transcode", "org_A", "T1");
    expect((await queue.claim("fetch-source", { perOrgLimit: 1 }))?.entityId).toBe("F1");
    expect((await queue.claim("transcode", { perOrgLimit: 1 }))?.entityId).toBe("T1");
  });

  test("advance hands a held job to its next stage as a fresh queued job; it is then claimable as that type", async () => {
    await enqueue("fetch-source", "org_A", "V1");
    const fetch = (await queue.claim("fetch-source"))!;
    expect(await queue.advance(fetch.id, { type: "transcode", payload: { sourcePath: "/x" } })).toBe(true);
    const row = (await queue.get(fetch.id))!;
    expect(row).toMatchObject({ type: "transcode", status: "queued", attempts: 0, claimedBy: null, payload: { sourcePath: "/x" } });
    expect(await queue.claim("fetch-source")).toBeNull();
    expect((await queue.claim("transcode"))?.id).toBe(fetch.id);
    // Not ours any more (e.g. cancelled): advance refuses.
    await database.write((tx) => queue.cancelForEntity(tx, "V1"));
    expect(await queue.advance(fetch.id, { type: "x", payload: {} })).toBe(false);
  });
});
