/**
 * Runs the real service in a child process, for tests that need several
 * service processes on one database file (two services in one process
 * cannot share a file: notes/stack-facts.md) or a process that dies by
 * `kill -9` (or by a crash point, VIDLIVE_FAULT).
 *
 * argv: envJson [orgJson]. envJson must name DATA_DIR; PORT and RTMP_PORT
 * default to 0 (free ports). Without orgJson ({ orgId, apiKey }) an
 * organization is created. Prints one JSON line on stdout once listening:
 * { port, rtmpPort, orgId, apiKey, holder, pid }. SIGTERM stops it gracefully.
 */
import { startTestService } from "./test-service.ts";

const [envJson, orgJson] = process.argv.slice(2);
const env = JSON.parse(envJson ?? "{}") as Record<string, string>;
const t = await startTestService({ dataDir: env.DATA_DIR, env, org: orgJson ? JSON.parse(orgJson) : undefined });
console.log(
  JSON.stringify({
    port: Number(new URL(t.base).port),
    rtmpPort: t.service.config.rtmpPort,
    orgId: t.orgId,
    apiKey: t.apiKey,
    holder: t.service.ledger.holder,
    pid: process.pid,
  }),
);
process.on("SIGTERM", () => {
  t.stop({ cleanup: false }).finally(() => process.exit(0));
});
setInterval(() => {}, 1 << 30);
