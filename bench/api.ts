/**
 * Every authenticated read route and the two create routes through the full
 * stack (auth read from libSQL, rate limits, routing, validation, envelope,
 * access log and metrics), against a bare Bun.serve answering the same bytes
 * (same status, same headers) or, for the writes, doing the same inserts in
 * one transaction on a libSQL file opened the same way (same pragmas, same
 * write queue and client). Both sides are loaded by `wrk` (1 thread, N
 * connections), bare and full rounds alternating after a warm-up; the table
 * shows the median round's req/s, the ratio and the full side's p99. Then
 * the full side again on a real sqld (`libsql://`).
 *
 * Usage: npm run bench:api [-- --seconds 5 --rounds 3 --connections 32 --no-sqld --only videos]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import { newId, randomToken } from "../src/ids.ts";
import { startSqld } from "../test/support/sqld.ts";
import { type Full, SEED, startFull } from "./api-fixture.ts";
import { cpuNow, cpuPer } from "./thread-cpu.ts";
import { requireWrk, wrk, type WrkResult, type WrkTarget } from "./wrk-run.ts";

requireWrk();
const argv = process.argv;
const num = (name: string, d: number) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : d;
};
const str = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? argv[i + 1] : undefined;
};
const seconds = num("seconds", 5);
const rounds = num("rounds", 3);
const connections = num("connections", 32);
const only = str("only");
const withSqld = !argv.includes("--no-sqld");
/** One wrk round, with this process's main-thread (event loop) CPU per request while it ran (µs; both servers live here, rounds alternate). */
async function load(t: WrkTarget, s = seconds): Promise<WrkResult & { cpuUs: number }> {
  const before = cpuNow();
  const r = await wrk(t, { seconds: s, connections });
  return { ...r, cpuUs: cpuPer(before, cpuNow(), r.requests, 1).mainMs * 1000 };
}

interface Route {
  name: string;
  method: "GET" | "POST";
  path: string;
  body?: string;
  /** For a write: the entity the route creates, read back to replay its rows on the bare side. */
  created?: (json: any) => string;
}

const ROUTES: Route[] = [
  { name: "GET /organization/", method: "GET", path: "/organization/" },
  { name: "GET /videos/{id}/", method: "GET", path: "/videos/{video}/" },
  { name: "GET /videos/?limit=100", method: "GET", path: "/videos/?limit=100" },
  { name: "GET /livestreams/{id}/", method: "GET", path: "/livestreams/{stream}/" },
  { name: "GET /livestreams/?limit=100", method: "GET", path: "/livestreams/?limit=100" },
  { name: "GET /webhooks/", method: "GET", path: "/webhooks/" },
  { name: "GET /videos/vid_missing/ (404)", method: "GET", path: "/videos/vid_missing/" },
  { name: "POST /livestreams/", method: "POST", path: "/livestreams/", body: JSON.stringify({ title: "Bench stream" }), created: (j: { data: { stream: { id: string } } }) => j.data.stream.id },
  {
    name: "POST /webhooks/",
    method: "POST",
    path: "/webhooks/",
    body: JSON.stringify({ url: "https://127.0.0.1:9/hook", events: ["VIDEO_TRANSCODING_COMPLETED"] }),
    created: (j: { data: { endpoint: { id: string } } }) => j.data.endpoint.id,
  },
].filter((r) => !only || r.name.includes(only)) as Route[];

function target(full: Full, r: Route): WrkTarget {
  const path = r.path.replace("{video}", full.ids.video).replace("{stream}", full.ids.stream);
  return { url: full.base + path, method: r.method, headers: { ...full.auth, ...(r.body ? { "content-type": "application/json" } : {}) }, body: r.body };
}

/** Rows one creation wrote (by entity id), to replay with fresh ids on the bare side. */
async function rowsOf(db: Database, id: string): Promise<Array<{ table: string; row: Record<string, unknown> }>> {
  const out: Array<{ table: string; row: Record<string, unknown> }> = [];
  const q: Array<[string, string]> = [
    ["actors", "id"],
    ["actor_tags", "actor_id"],
    ["stream_key_digests", "stream_id"],
    ["outbox", "entity_id"],
    ["work", "entity_id"],
    ["webhook_endpoints", "id"],
  ];
  for (const [table, col] of q) {
    const res = await db.client.execute({ sql: `SELECT * FROM ${table} WHERE ${col} = ?`, args: [id] });
    for (const row of res.rows) {
      const o: Record<string, unknown> = {};
      for (const c of res.columns) o[c] = (row as any)[c];
      // The outbox's seq is the database's.
      if (table === "outbox") delete o.seq;
      out.push({ table, row: o });
    }
  }
  return out;
}

/**
 * A bare Bun.serve for a write route: per request, one transaction (the
 * same `write()` queue, client and pragmas as the service) with the reads
 * the route makes (slot counts, endpoint count) and the same rows inserted,
 * ids fresh; answers the full side's bytes.
 */
async function bareWriter(r: Route, sample: { status: number; headers: Headers; body: string }, rows: Array<{ table: string; row: Record<string, unknown> }>, entityId: string) {
  const dir = mkdtempSync(join(tmpdir(), "bench-api-bare-"));
  const db = await createDatabase({ url: `file:${join(dir, "bare.db")}` });
  await db.write((tx) => tx.run(sql`INSERT INTO organizations (id, name, settings, created_at) VALUES ('org_bench', 'bench', '{}', 0)`));
  const stmts = rows.map(({ table, row }) => {
    const cols = Object.keys(row);
    return { text: `INSERT INTO ${table} (${cols.join(", ")}) VALUES`, cols, row };
  });
  const reads =
    r.path === "/livestreams/"
      ? ["SELECT count(*) FROM actor_tags WHERE kind = 'livestream' AND tag = 'holdsSlot' AND org_id = 'org_bench'", "SELECT count(*) FROM actor_tags WHERE kind = 'livestream' AND tag = 'holdsSlot'"]
      : ["SELECT count(*) FROM webhook_endpoints WHERE org_id = 'org_bench' AND deleted_at IS NULL"];
  const headers = Object.fromEntries([...sample.headers].filter(([k]) => k !== "content-length" && k !== "date"));
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      await req.text();
      const id = newId(entityId.slice(0, entityId.indexOf("_")) as never);
      await db.write(async (tx) => {
        for (const s of stmts) {
          const args = s.cols.map((c) => {
            const v = s.row[c];
            if (c === "org_id") return "org_bench";
            if ((c === "id" && v !== entityId) || c === "digest") return randomToken(16);
            return typeof v === "string" ? v.replaceAll(entityId, id) : v;
          });
          await tx.run(
            sql`${sql.raw(s.text)} (${sql.join(
              args.map((a) => sql`${a}`),
              sql`, `,
            )})`,
          );
        }
        for (const q of reads) await tx.run(sql.raw(q));
      });
      return new Response(sample.body, { status: sample.status, headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}${r.path}`,
    stop() {
      server.stop(true);
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = <T extends WrkResult>(xs: T[]) => [...xs].sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)]!;
const medianCpu = (xs: Array<{ cpuUs: number }>) => [...xs].map((x) => x.cpuUs).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  route: string;
  bare: WrkResult;
  full: WrkResult;
  /** Main-thread CPU µs per request, median round: bare and full. */
  cpu: { bare: number; full: number };
  sqld?: WrkResult;
  status: number;
}

const full = await startFull();
const table: Row[] = [];
for (const r of ROUTES) {
  const t = target(full, r);
  const res = await fetch(t.url, { method: r.method, headers: t.headers, body: r.body });
  const body = await res.text();
  const sample = { status: res.status, headers: res.headers, body };
  let bare: { url: string; stop(): void };
  if (r.method === "GET") {
    const headers = Object.fromEntries([...res.headers].filter(([k]) => k !== "content-length" && k !== "date"));
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(body, { status: res.status, headers }) });
    bare = { url: `http://127.0.0.1:${server.port}/`, stop: () => server.stop(true) };
  } else {
    const id = r.created!(JSON.parse(body));
    bare = await bareWriter(r, sample, await rowsOf(full.service.database, id), id);
  }
  const bareTarget: WrkTarget = { ...t, url: bare.url };
  await load(bareTarget, 1);
  await load(t, 1);
  const b: Array<WrkResult & { cpuUs: number }> = [];
  const f: Array<WrkResult & { cpuUs: number }> = [];
  for (let i = 0; i < rounds; i++) {
    b.push(await load(bareTarget));
    f.push(await load(t));
  }
  bare.stop();
  const row: Row = { route: r.name, bare: median(b), full: median(f), cpu: { bare: medianCpu(b), full: medianCpu(f) }, status: res.status };
  table.push(row);
  console.error(`${r.name}: bare ${b.map((x) => x.rps.toFixed(0)).join("/")} full ${f.map((x) => x.rps.toFixed(0)).join("/")} (status ${res.status})`);
}
await full.stop();

if (withSqld) {
  const sqld = await startSqld();
  try {
    const remote = await startFull(sqld.url);
    for (const r of ROUTES) {
      const t = target(remote, r);
      await load(t, 1);
      const f: WrkResult[] = [];
      for (let i = 0; i < rounds; i++) f.push(await load(t));
      table.find((x) => x.route === r.name)!.sqld = median(f);
    }
    await remote.stop();
  } finally {
    await sqld.stop();
  }
}

const pad = (s: string, n: number) => s.padEnd(n);
const num0 = (n: number) => n.toFixed(0).padStart(8);
console.log(`\nbench:api  wrk -t1 -c${connections}, ${rounds} alternating rounds of ${seconds} s each side (median round), ${SEED} items per list`);
console.log(`${pad("route", 34)} ${"bare/s".padStart(8)} ${"full/s".padStart(8)}  ratio  full p99  CPU µs/req bare/full${withSqld ? "   sqld/s  sqld p99" : ""}`);
for (const row of table) {
  const bad = row.status >= 400 ? row.full.requests - row.full.non2xx : row.full.non2xx;
  const sq = row.sqld ? `  ${num0(row.sqld.rps)}  ${row.sqld.p99Ms.toFixed(1).padStart(6)} ms` : "";
  console.log(
    `${pad(row.route, 34)} ${num0(row.bare.rps)} ${num0(row.full.rps)}  ${(row.full.rps / row.bare.rps).toFixed(2).padStart(5)}  ${row.full.p99Ms.toFixed(1).padStart(5)} ms  ${row.cpu.bare.toFixed(0).padStart(6)} / ${row.cpu.full.toFixed(0).padEnd(6)}${sq}${bad > 0 || row.full.socketErrors > 0 ? `  (${bad} unexpected status, ${row.full.socketErrors} socket errors)` : ""}`,
  );
}
console.log("targets: ratio >= 0.50, full p99 < 10 ms");
