import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database } from "./create-database.ts";
import { rateLimits } from "./schema/index.ts";

setDefaultTimeout(120_000);

let dir: string;
let database: Database | undefined;
afterEach(async () => {
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * `cli key create` beside a running server: another process opens the database file, writes and closes. POSIX locks
 * belong to the process, and closing any descriptor of a file drops all of them: when the read cache mapped `-shm`
 * with Bun.mmap (which opens and closes the file), the server's own connections lost their lock on the shared
 * memory, the other process found itself alone, truncated `-shm` and rebuilt it, and the server died of SIGBUS on
 * its next read of the mapping.
 */
test("another process writing beside this one never rebuilds the shared memory under it", async () => {
  dir = mkdtempSync(join(tmpdir(), "shm-"));
  const path = join(dir, "t.db");
  database = await createDatabase({ url: `file:${path}` });
  await database.write((tx) => tx.insert(rateLimits).values({ key: "here-before", windowStart: 1, count: 1 }));
  const before = database.hot.version();
  for (let i = 0; i < 3; i++) {
    const sql = `INSERT INTO rate_limits (key, window_start, count) VALUES ('other-${i}', 1, 1)`;
    const child = Bun.spawn([process.execPath, "-e", `import D from "libsql"; const d = new D(${JSON.stringify(path)}); d.exec("${sql}"); d.close();`], {
      cwd: join(import.meta.dir, "..", ".."),
      stdout: "ignore",
      stderr: "pipe",
    });
    expect({ code: await child.exited, err: await new Response(child.stderr).text() }).toEqual({ code: 0, err: "" });
    // This process reads through its cache check and writes on: the other's rows are there, and ours land.
    expect(database.hot.version()).not.toBe(before);
    await database.write((tx) => tx.insert(rateLimits).values({ key: `here-${i}`, windowStart: 1, count: 1 }));
  }
  const keys = (await database.db.select().from(rateLimits)).map((r) => r.key).sort();
  expect(keys).toEqual(["here-0", "here-1", "here-2", "here-before", "other-0", "other-1", "other-2"]);
});
