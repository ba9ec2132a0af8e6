import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import LibsqlDatabase from "libsql";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { actors, work } from "../src/db/schema/index.ts";
import { createLogger } from "../src/log.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { FIXTURES, startFileServer } from "./support/file-server.ts";
import { parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { answer, ok } from "./support/api.ts";

/** The stored actor state this test rewrites (the fields it touches; the rest passes through). */
type ActorState = { context: { outcome: { renditions: Record<string, unknown>[]; download_passwords_sealed?: unknown } & Record<string, unknown> } & Record<string, unknown> } & Record<
  string,
  unknown
>;
setDefaultTimeout(120_000);

/**
 * What is stored and served stays private: originals are never under /media/,
 * download passwords are sealed at rest, failure messages name no server
 * path, and an upload's URL is one source whatever is appended to it.
 */
const files = startFileServer();
let t: TestService;

/** The service's log lines (debug and up): the raw tool output of a failure must be here, not in the video. */
const logLines: string[] = [];
const logger = createLogger({ level: "debug", write: (line) => logLines.push(line) });

beforeAll(async () => {
  t = await startTestService({ env: { MEDIA_BACKEND: "native" }, logger });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, downloads: { rungs: ["top"], format: "mp4-encrypted" } }));
});
afterAll(async () => {
  await t.stop();
  files.stop();
});

async function register(sourceUrl: string) {
  const res = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl } });
  return { status: res.status, body: await answer(res, "createVideo") };
}

async function settled(id: string): Promise<any> {
  return waitFor(
    async () => {
      const d = (await ok(t.api(`/videos/${id}/`), "getVideo")).data;
      return d.video.status !== "TRANSCODING" ? d : undefined;
    },
    { timeoutMs: 90_000, what: `video ${id} settled` },
  );
}

/** Every byte of the database but the outbox and webhook deliveries (which deliver the password, as the spec says). */
function bytesWithoutDeliveries(dataDir: string): Buffer {
  const copy = join(dataDir, "..", `copy-${process.pid}-${Date.now()}.db`);
  const live = new LibsqlDatabase(join(dataDir, "service.db"), { readonly: true });
  live.exec(`VACUUM INTO '${copy}'`);
  live.close();
  const db = new LibsqlDatabase(copy);
  for (const table of ["outbox", "webhook_deliveries"]) db.exec(`DELETE FROM ${table}`);
  db.exec("VACUUM");
  db.close();
  const bytes = readFileSync(copy);
  rmSync(copy);
  return bytes;
}

describe("a completed video with an encrypted download", () => {
  let id: string;
  let data: any;

  beforeAll(async () => {
    const r = await register(files.url("av-360p-2s.mp4"));
    expect(r.status).toBe(201);
    id = r.body.data.asset.public_id;
    data = await settled(id);
    expect(data.video.status).toBe("COMPLETED");
  }, 120_000);

  test("the original is not served under /media/, while playlists, segments and the download are", async () => {
    const mediaBase = data.video.url.replace(/hls\/.*$/, "");
    // Where versions before kept it (beside the playback files), and the same with encoded separators.
    for (const path of ["original/source.mp4", "original%2Fsource.mp4", "hls/../original/source.mp4", "./original/source.mp4"]) {
      const res = await fetch(mediaBase + path);
      expect(res.status).toBe(404);
    }
    // It is kept, outside the served tree.
    expect(readdirSync(t.service.store.originalDir(id))).toEqual(["source.mp4"]);
    expect(Number(data.storage.original_bytes)).toBe(Bun.file(join(FIXTURES, "av-360p-2s.mp4")).size);
    expect(existsSync(join(t.service.store.mediaDir(id), "original"))).toBe(false);
    // An original left in the served tree by an older version is refused too.
    mkdirSync(join(t.service.store.mediaDir(id), "original"), { recursive: true });
    writeFileSync(join(t.service.store.mediaDir(id), "original", "source.mp4"), "old layout");
    expect((await fetch(mediaBase + "original/source.mp4")).status).toBe(404);

    const master = await fetch(data.video.url);
    expect(master.status).toBe(200);
    const mp = parsePlaylist(await master.text());
    const mediaUrl = new URL(mp.streams[0]!.uri, data.video.url);
    const media = parsePlaylist(await (await fetch(mediaUrl)).text());
    expect((await fetch(new URL(media.uris[0]!, mediaUrl))).status).toBe(200);
    const dl = await fetch(data.video.download_url);
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-disposition")).toStartWith("attachment");
  });

  test("download_password is sealed at rest; GET and the events still carry it, and it opens the download", async () => {
    const password: string = data.video.download_password;
    expect(password).toMatch(/^[0-9a-f]{32}$/);
    expect(data.renditions[0].download_password).toBe(password);

    const [row] = await t.service.database.db
      .select({ raw: sql<string>`CAST(${actors.state} AS TEXT)` })
      .from(actors)
      .where(eq(actors.id, id));
    expect(row!.raw).not.toContain(password);
    expect(row!.raw).toContain("download_passwords_sealed");
    expect(bytesWithoutDeliveries(t.dataDir).includes(Buffer.from(password))).toBe(false);

    // The spec delivers it in the event.
    const completed = (await outboxEvents(t.service, id)).find((e) => e.event === "VIDEO_TRANSCODING_COMPLETED")!;
    expect(completed.data.video.download_password).toBe(password);

    const file = join(mkdtempSync(join(tmpdir(), "dl-")), "dl.mp4");
    await Bun.write(file, await (await fetch(data.video.download_url)).arrayBuffer());
    const decoded = Bun.spawnSync(["ffmpeg", "-v", "error", "-decryption_key", password, "-i", file, "-map", "0:v", "-f", "framemd5", "-"], { stdout: "pipe", stderr: "pipe" });
    expect(decoded.exitCode).toBe(0);
    expect(decoded.stderr.toString()).toBe("");
    rmSync(join(file, ".."), { recursive: true, force: true });
  });

  test("a row stored with a plaintext password (before sealing) is sealed at the next start and still reads the same", async () => {
    const password: string = data.video.download_password;
    // Write the row as older versions stored it.
    const [row] = await t.service.database.db.select().from(actors).where(eq(actors.id, id));
    const state = row!.state as ActorState;
    const { download_passwords_sealed: _s, ...outcome } = state.context.outcome;
    const legacy = { ...state, context: { ...state.context, outcome: { ...outcome, renditions: outcome.renditions.map((r) => ({ ...r, download_password: password })) } } };
    await t.service.database.write((tx) => tx.update(actors).set({ state: legacy }).where(eq(actors.id, id)));
    const org = { orgId: t.orgId, apiKey: t.apiKey };
    await t.stop({ cleanup: false });
    t = await startTestService({ dataDir: t.dataDir, org, env: { MEDIA_BACKEND: "native" }, logger });
    const [after] = await t.service.database.db
      .select({ raw: sql<string>`CAST(${actors.state} AS TEXT)` })
      .from(actors)
      .where(eq(actors.id, id));
    expect(after!.raw).not.toContain(password);
    const again = (await ok(t.api(`/videos/${id}/`), "getVideo")).data;
    expect(again.video.download_password).toBe(password);
  });
});

test("a failing transcode's message, stored and sent in the webhook event, names no server path", async () => {
  const r = await register(files.url("corrupt.mp4"));
  const id = r.body.data.asset.public_id;
  const d = await settled(id);
  expect(d.video.status).toBe("ERROR");
  expect(d.error.code).toBe("INPUT_UNSUPPORTED");
  const failed = (await outboxEvents(t.service, id)).find((e) => e.event === "VIDEO_TRANSCODING_FAILED")!;
  for (const message of [d.error.message as string, failed.data.error.message as string]) {
    expect(message.length).toBeGreaterThan(0);
    expect(message).not.toContain(t.dataDir);
    expect(message).not.toContain(tmpdir());
    expect(message).not.toMatch(/(^|[\s'"(:])\/[A-Za-z0-9_.-]+\//); // no absolute path at all
  }
});

/**
 * Issue 23 (17): a file that is not media (text uploaded as .mp4) made ffprobe print
 * "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55…] moov atom not found", and that was the video's message. The
 * message names the problem in the user's terms; ffprobe's words reach the log only.
 */
test("a source that is not media fails with a message in the user's terms; the tool's output is in the log only", async () => {
  const up = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
  expect((await fetch(up.upload_url, { method: "PUT", body: "hello, this is not a video\n".repeat(40) })).status).toBe(200);
  const id = (await register(up.source_url)).body.data.asset.public_id;
  const d = await settled(id);
  expect(d.video.status).toBe("ERROR");
  expect(d.error).toEqual({ code: "INPUT_UNSUPPORTED", message: "The source is not a video or audio file this service can read." });
  const failed = (await outboxEvents(t.service, id)).find((e) => e.event === "VIDEO_TRANSCODING_FAILED")!;
  expect(failed.data.error).toEqual(d.error);
  // The operator still sees what ffprobe said, on the line that reports the failure.
  const line = logLines.find((l) => l.includes(id) && l.includes("Work failed for good"));
  expect(line, logLines.filter((l) => l.includes(id)).join("\n")).toBeDefined();
  expect(line).toMatch(/moov atom not found|Invalid data found/);
});

describe("uploads", () => {
  test("an upload's source_url with an added query or fragment, or the upload_url itself, is the same upload", async () => {
    const up = (await ok(t.api("/videos/upload-url/", { method: "POST", json: {} }), "createUploadUrl")).data;
    expect((await fetch(up.upload_url, { method: "PUT", body: Bun.file(join(FIXTURES, "av-360p-2s.mp4")) })).status).toBe(200);
    const first = await register(up.source_url);
    expect(first.status).toBe(201);
    const id = first.body.data.asset.public_id;
    expect(first.body.data.video.source_url).toBe(up.source_url);
    for (const variant of [`${up.source_url}?again=1`, `${up.source_url}#frag`, `${up.source_url}?x=1#y`, up.upload_url]) {
      const again = await register(variant);
      expect(again.status).toBe(200);
      expect(again.body.data.asset.public_id).toBe(id);
    }
    const rows = await t.service.database.db.select().from(work).where(eq(work.entityId, id));
    expect(rows).toHaveLength(1);
    const list = (await ok(t.api("/videos/?limit=100"), "listVideos")).data.items.filter((v: any) => v.video.source_url?.startsWith(up.source_url));
    expect(list).toHaveLength(1);
    const d = await settled(id);
    expect(d.video.status).toBe("COMPLETED");
    // The upload entered the library's originals, not the served tree.
    expect(readdirSync(t.service.store.originalDir(id))).toHaveLength(1);
  }, 90_000);
});
