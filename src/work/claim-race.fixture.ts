/**
 * One process of the ledger's exclusivity test (work-ledger.test.ts): opens
 * the database file, waits for the common start time, then claims
 * `retention` rows as `holder` until none is left and prints their ids.
 * argv: dbPath holder startAtMs.
 */
import { createDatabase } from "../db/create-database.ts";
import { fixtureWork } from "./work-fixture.ts";
import { createWorkLedger } from "./work-ledger.ts";

const [path, holder, startAt] = process.argv.slice(2);
const database = await createDatabase({ url: `file:${path}` });
const ledger = createWorkLedger({ database, holder: holder!, leaseMs: 60_000, work: fixtureWork() });
await Bun.sleep(Math.max(0, Number(startAt) - Date.now()));
const ids: string[] = [];
for (;;) {
  const row = await ledger.claim("retention");
  if (!row) break;
  ids.push(row.id);
}
await database.close();
console.log(JSON.stringify(ids));
