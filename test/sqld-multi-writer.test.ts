import { expect, test } from "bun:test";
import { eq, inArray } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { join } from "node:path";
import { createDatabase } from "../src/db/create-database.ts";
import { actors, outbox, work } from "../src/db/schema/index.ts";
import { counterRuntime, createCounter } from "./support/counter-actor.ts";
import { startSqld } from "./support/sqld.ts";

/**
 * Three writer processes on one real libSQL server (sqld), each through
 * another URL form (libsql://?tls=0, http://, ws://), starting together on a
 * fresh database: the migrations are applied once, then every work row is
 * claimed exactly once and every actor transition lands exactly once.
 */

const FIXTURE = join(import.meta.dir, "support", "sqld-writer.fixture.ts");
const MIGRATIONS = readMigrationFiles({ migrationsFolder: join(import.meta.dir, "..", "src", "db", "migrations") });
const ROWS = 150;
const ACTORS = 4;
const INCS = 20;

interface Reader {
  read(): Promise<{ value?: Uint8Array; done: boolean }>;
}

async function firstLine(stream: { getReader(): Reader }): Promise<{ line: string; rest: Reader }> {
  const reader = stream.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { line: text, rest: reader };
    text += new TextDecoder().decode(value);
    if (text.includes("\n")) return { line: text.slice(0, text.indexOf("\n")), rest: reader };
  }
}

async function restOf(reader: Reader): Promise<string> {
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += new TextDecoder().decode(value);
  }
}

test("three writer processes on sqld: migrations once, every claim once, every transition once", async () => {
  const server = await startSqld();
  const holders = ["writer_libsql", "writer_http", "writer_ws"];
  const urls = [server.url, server.httpUrl, server.wsUrl];
  const actorIds = Array.from({ length: ACTORS }, (_, i) => `vid_counter_${i}`);
  const procs = holders.map((h, i) => Bun.spawn([process.execPath, FIXTURE, urls[i]!, h, JSON.stringify(actorIds), String(INCS)], { stdin: "pipe", stdout: "pipe", stderr: "inherit" }));
  try {
    // All three open the fresh database at once: the migrations race.
    const readers = await Promise.all(procs.map((p) => firstLine(p.stdout)));
    expect(readers.map((r) => r.line)).toEqual(holders.map(() => JSON.stringify({ ready: true })));

    const database = await createDatabase({ url: server.url, timeoutMs: 60_000 });
    try {
      const applied = await database.client.execute("SELECT created_at FROM __drizzle_migrations ORDER BY created_at");
      expect(applied.rows.map((r) => Number(r[0]))).toEqual(MIGRATIONS.map((m) => m.folderMillis));

      const { runtime, ledger } = counterRuntime(database, "writer_setup");
      for (const id of actorIds) await createCounter(runtime, id, "org_counter");
      const ids = new Set<string>();
      await database.write(async (tx) => {
        for (let i = 0; i < ROWS; i++) ids.add(await ledger.enqueue(tx, { type: "retention", payload: {}, orgId: `org_${i % 3}`, entityId: `ent_${i}` }));
      });

      for (const p of procs) {
        p.stdin.write("go\n");
        p.stdin.flush();
      }
      const outs = await Promise.all(
        procs.map(async (p, i) => {
          const text = await restOf(readers[i]!.rest);
          expect(await p.exited).toBe(0);
          return JSON.parse(text.trim()) as { claimed: string[]; changed: number };
        }),
      );

      // Work: every row claimed by exactly one process, finished by it.
      const claimed = outs.flatMap((o) => o.claimed);
      expect(claimed.length).toBe(ROWS);
      expect(new Set(claimed)).toEqual(ids);
      const rows = await database.db
        .select()
        .from(work)
        .where(inArray(work.id, [...ids]));
      for (const r of rows) expect(r).toMatchObject({ status: "done", attempts: 1, claimedBy: holders[outs.findIndex((o) => o.claimed.includes(r.id))] });

      // Transitions: each INC changed its actor once; n, version and the events' n values say none was lost or doubled.
      expect(outs.map((o) => o.changed)).toEqual(holders.map(() => ACTORS * INCS));
      for (const id of actorIds) {
        const [row] = await database.db.select().from(actors).where(eq(actors.id, id));
        expect((row!.state as { context: { n: number } }).context.n).toBe(3 * INCS);
        expect(row!.version).toBe(1 + 3 * INCS);
        const events = await database.db.select().from(outbox).where(eq(outbox.entityId, id));
        const ns = events.map((e) => (e.payload as { n: number }).n).sort((a, b) => a - b);
        expect(ns).toEqual(Array.from({ length: 3 * INCS }, (_, i) => i + 1));
        // In commit order, the events count up.
        const bySeq = [...events].sort((a, b) => a.seq - b.seq).map((e) => (e.payload as { n: number }).n);
        expect(bySeq).toEqual(ns);
      }
    } finally {
      database.close();
    }
  } finally {
    for (const p of procs) p.kill("SIGKILL");
    await server.stop();
  }
}, 300_000);
