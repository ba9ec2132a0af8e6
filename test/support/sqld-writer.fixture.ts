/**
 * One writer process of test/sqld-multi-writer.test.ts. Opens the database
 * at `url` (on a fresh server: the migrations race with the other writers'),
 * prints `{"ready":true}`, waits for a line on stdin, then at once claims (and
 * finishes) `retention` work rows until none is left and sends `incs` INC
 * events to each counter actor, all overlapping. Prints `{claimed, changed}`.
 * argv: url holder actorIdsJson incs
 */
import { createDatabase } from "../../src/db/create-database.ts";
import { counterRuntime, inc } from "./counter-actor.ts";

const [url, holder, actorIdsJson, incs] = process.argv.slice(2);
// The test checks exactly-once claims and transitions, not speed: a loaded 2-core machine may hold a contended write past the 10 s default.
const database = await createDatabase({ url: url!, timeoutMs: 60_000 });
const { runtime, ledger } = counterRuntime(database, holder!);
console.log(JSON.stringify({ ready: true }));
for await (const _line of console) break;

async function claimAll(): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const row = await ledger.claim("retention");
    if (!row) return ids;
    ids.push(row.id);
    if (!(await ledger.finish(row.id))) throw new Error(`finish of ${row.id} refused`);
  }
}

const actorIds = JSON.parse(actorIdsJson!) as string[];
const sends = actorIds.flatMap((id) => Array.from({ length: Number(incs) }, () => inc(runtime, id)));
const [claimed, results] = await Promise.all([claimAll(), Promise.all(sends)]);
database.close();
console.log(JSON.stringify({ claimed, changed: results.filter((r) => r?.changed).length }));
