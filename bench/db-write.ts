/**
 * What one write transaction costs through `createDatabase().write` (a read
 * then an update of one row, the shape of an actor transition or a claim):
 * on a `file:` database, and on a real sqld through each remote URL form.
 * Also one transaction at a time from 3 clients at once (three processes'
 * queues contending on the server's write lock).
 *
 *   bun bench/db-write.ts [transactions=300]
 */
import { eq } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import { rateLimits } from "../src/db/schema/index.ts";
import { startSqld } from "../test/support/sqld.ts";

const N = Number(process.argv[2] ?? 300);

const bump = (d: Database) =>
  d.write(async (tx) => {
    const [row] = await tx.select({ count: rateLimits.count }).from(rateLimits).where(eq(rateLimits.key, "c"));
    await tx
      .update(rateLimits)
      .set({ count: row!.count + 1 })
      .where(eq(rateLimits.key, "c"));
  });

async function measure(label: string, dbs: Database[]): Promise<void> {
  await dbs[0]!.write((tx) => tx.insert(rateLimits).values({ key: "c", windowStart: 0, count: 0 }).onConflictDoNothing());
  for (let i = 0; i < 20; i++) await bump(dbs[0]!); // warm-up
  const t0 = performance.now();
  // Each client awaits its own transactions one by one, as the process's write queue does.
  await Promise.all(
    dbs.map(async (d) => {
      for (let i = 0; i < N; i++) await bump(d);
    }),
  );
  const ms = performance.now() - t0;
  const total = N * dbs.length;
  console.log(`${label.padEnd(34)} ${(ms / total).toFixed(3)} ms/transaction  ${Math.round((total / ms) * 1000)} transactions/s`);
}

const dir = mkdtempSync(join(tmpdir(), "bench-db-"));
const file = await createDatabase({ url: `file:${join(dir, "t.db")}` });
await measure("file: (1 client)", [file]);
file.close();
rmSync(dir, { recursive: true, force: true });

const server = await startSqld();
try {
  for (const [label, url] of [
    ["libsql://?tls=0 (1 client)", server.url],
    ["ws:// (1 client)", server.wsUrl],
    ["http:// (1 client)", server.httpUrl],
  ] as const) {
    const d = await createDatabase({ url });
    await measure(label, [d]);
    d.close();
  }
  const three = await Promise.all([server.url, server.url, server.url].map((url) => createDatabase({ url })));
  await measure("libsql://?tls=0 (3 clients at once)", three);
  for (const d of three) d.close();
  const threeHttp = await Promise.all([server.httpUrl, server.httpUrl, server.httpUrl].map((url) => createDatabase({ url })));
  await measure("http:// (3 clients at once)", threeHttp);
  for (const d of threeHttp) d.close();
} finally {
  await server.stop();
}
