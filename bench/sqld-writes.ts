/**
 * The issue-24 write load against sqld, with a probe write each second from
 * outside the services; on a probe stuck over 8 s it prints sqld's threads'
 * wait channels and (with gdb) their backtraces to .tmp/sqld-bt.txt. Figures:
 * with sqld's default WAL (VIDLIVE_SQLD_WAL=sqlite) 4 of 4 runs stalled 15-105 s
 * in (threads in ManagedConnectionWalWrapper::acquire); with libsql-wal 0 of 2.
 *
 * Usage: bun bench/sqld-writes.ts [seconds=180] [url|ws]
 */
import { createDatabase } from "../src/db/create-database.ts";
import { createOrgStore } from "../src/orgs/org-store.ts";
import { startCluster } from "../test/support/cluster.ts";
import { startFileServer } from "../test/support/file-server.ts";
import { longestGap, runRegistrationLoad } from "../test/support/registration-load.ts";

const seconds = Number(process.argv[2] ?? 180);
const url = process.argv[3] ?? "url";
const origin = startFileServer();
const cluster = await startCluster({ name: "repro", logLevel: "info" });
const env: Record<string, string> = url === "ws" ? { DATABASE_URL: cluster.sqld.wsUrl } : {};
const first = await cluster.spawn(env);
const database = await createDatabase({ url: cluster.sqld.url });
await createOrgStore(database).updateSettings(first.orgId, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 10_000_000, videosCreatePerMinute: 10_000_000 } }));
await cluster.spawn(env);
await cluster.spawn(env);
console.log("cluster up", cluster.sqld.url);
const t0 = performance.now();
let probeMax = 0;
let dumped = false;
let inflight = 0;
setInterval(() => {
  if (!dumped && inflight && performance.now() - inflight > 8000) {
    dumped = true;
    console.log(
      Bun.spawnSync([
        "sh",
        "-c",
        `for t in /proc/${cluster.sqld.pid}/task/*; do cat $t/wchan; echo; done | sort | uniq -c; cat /proc/${cluster.sqld.pid}/task/*/stack | sort | uniq -c | sort -rn | head -30; gdb -p ${cluster.sqld.pid} -batch -ex "thread apply all bt 25" > .tmp/sqld-bt.txt 2>&1`,
      ]).stdout.toString(),
    );
  }
}, 1000).unref();
let stop = false;
const probe = (async () => {
  await database.client.execute("CREATE TABLE IF NOT EXISTS probe (n INTEGER)");
  while (!stop) {
    const s = performance.now();
    inflight = s;
    await database
      .write(async (tx) => {
        await tx.run(`INSERT INTO probe VALUES (1)` as never);
      })
      .catch((e) => console.log("probe err", String(e)));
    const d = performance.now() - s;
    probeMax = Math.max(probeMax, d);
    inflight = 0;
    if (d > 3000) console.log(`probe write took ${d.toFixed(0)} ms at ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    await Bun.sleep(1000);
  }
})();
const ticker = setInterval(() => console.log(`${((performance.now() - t0) / 1000).toFixed(0)} s`), 15000);
const stats = await runRegistrationLoad({ children: () => cluster.children, source: (i) => origin.url(`missing-${i}.mp4`), clients: 16, total: 4000, untilMs: seconds * 1000 });
clearInterval(ticker);
stop = true;
await probe;
console.log(
  JSON.stringify({
    registered: stats.registered.length,
    statuses: [...stats.statuses].map(([p, m]) => [p, [...m]]),
    longest: stats.longestMs,
    gap: longestGap(stats.okTimes, t0, performance.now()),
    probeMax,
    dishonest: [...stats.dishonest],
  }),
);
for (const c of cluster.children)
  console.log(
    c
      .recentLogs()
      .filter((l) => /error|warn/i.test(l))
      .slice(-5)
      .join("\n"),
  );
database.close();
await cluster.stop();
origin.stop();
