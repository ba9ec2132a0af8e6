/**
 * One process of the take-over race (broadcast-leases.test.ts): opens the
 * database file, waits for the common start time, then tries to take each
 * stream's lapsed broadcast lease as `holder` and prints those it won.
 * argv: dbPath holder startAtMs streamIds (comma-separated).
 */
import { createDatabase } from "../db/create-database.ts";
import { createBroadcastLeases } from "./broadcast-leases.ts";

const [path, holder, startAt, ids] = process.argv.slice(2);
const database = await createDatabase({ url: `file:${path}` });
const leases = createBroadcastLeases({ database, holder: holder!, leaseMs: 60_000 });
await Bun.sleep(Math.max(0, Number(startAt) - Date.now()));
const won: string[] = [];
for (const id of ids!.split(",")) {
  const got = await database.write((tx) => leases.acquire(tx, id, "org_race"));
  if (got.ok && got.takenFrom?.claimedBy === "proc-dead") won.push(id);
}
database.close();
console.log(JSON.stringify(won));
