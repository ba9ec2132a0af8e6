import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import LibsqlDatabase from "libsql";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { waitFor } from "./support/events.ts";
import { WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";
import { spawnService } from "./support/service-process.ts";

setDefaultTimeout(120_000);

let t: TestService | undefined;
let rx: WebhookReceiver | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await t?.stop();
  t = undefined;
  rx?.stop();
  rx = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A DATA_DIR that does not exist yet, so the service creates it. */
function freshDataDir(): string {
  const parent = mkdtempSync(join(tmpdir(), "secrets-"));
  dirs.push(parent);
  return join(parent, "data");
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/**
 * Every byte of the database: a copy made with VACUUM INTO (the WAL's pages
 * folded in), vacuumed again (no free pages).
 */
function databaseBytes(dataDir: string): Buffer {
  const copy = join(dataDir, "..", `copy-${Date.now()}.db`);
  const live = new LibsqlDatabase(join(dataDir, "service.db"), { readonly: true });
  live.exec(`VACUUM INTO '${copy}'`);
  live.close();
  const db = new LibsqlDatabase(copy);
  db.exec("VACUUM");
  db.close();
  const bytes = readFileSync(copy);
  rmSync(copy);
  return bytes;
}

/** Every row of every table, as text. */
async function allRows(t: TestService): Promise<Record<string, string>> {
  const tables = await t.service.database.client.execute("SELECT name FROM sqlite_master WHERE type = 'table'");
  const out: Record<string, string> = {};
  for (const { name } of tables.rows as unknown as Array<{ name: string }>) {
    const rows = await t.service.database.client.execute(`SELECT * FROM "${name}"`);
    out[name] = JSON.stringify(rows.rows);
  }
  return out;
}

async function getStream(id: string) {
  return (await ok(t!.api(`/livestreams/${id}/`), "getLivestream")).data?.stream;
}

describe("stream keys at rest", () => {
  test("neither the stream key nor the rtmp_url is stored in plaintext anywhere, event payloads and webhook bodies included; publishing, GET and deliveries still work", async () => {
    const dataDir = freshDataDir();
    t = await startTestService({ dataDir, env: WEBHOOK_ENV });
    rx = startWebhookReceiver();
    const hook = await t.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED"] } });
    expect(hook.status).toBe(201);
    const created = await t.api("/livestreams/", { method: "POST", json: { title: "Sealed" } });
    expect(created.status).toBe(201);
    const s = (await ok(created, "createLivestream")).data.stream;
    const key: string = s.stream_key;
    const sig = new URL(s.rtmp_url.replace(/^rtmp:/, "http:")).searchParams.get("sig")!;
    expect(key).toMatch(/^[0-9A-Za-z]{32}$/);
    expect(sig).toMatch(/^[0-9a-f]{32}$/);

    // The receiver gets the push credentials, as the spec delivers them; the database holds them only sealed.
    const [scheduled] = await rx.waitFor(1, 10_000);
    expect(JSON.parse(scheduled!.body)).toMatchObject({ event: "LIVESTREAM_SCHEDULED", data: { stream: { stream_key: key, rtmp_url: s.rtmp_url } } });

    const assertNowhere = async () => {
      const rows = await allRows(t!);
      expect(Object.keys(rows)).toEqual(expect.arrayContaining(["actors", "stream_key_digests", "work", "uploads", "outbox", "webhook_deliveries"]));
      expect(JSON.parse(rows.webhook_deliveries!).length).toBeGreaterThan(0);
      for (const [table, text] of Object.entries(rows)) {
        expect({ table, hasKey: text.includes(key), hasSig: text.includes(sig) }).toEqual({ table, hasKey: false, hasSig: false });
      }
      const bytes = databaseBytes(dataDir);
      expect(bytes.includes(key)).toBe(false);
      expect(bytes.includes(sig)).toBe(false);
    };
    await assertNowhere();
    const state = await t.service.database.client.execute({ sql: "SELECT state FROM actors WHERE id = ?", args: [s.id] });
    expect(JSON.parse(String(state.rows[0]!.state)).context).toMatchObject({ sealed: expect.stringMatching(/^v1\./) });
    const digests = await t.service.database.client.execute("SELECT * FROM stream_key_digests");
    expect(digests.rows).toHaveLength(1);
    expect(digests.rows[0]!.digest).toMatch(/^[0-9a-f]{64}$/);

    // GET answers the key and the complete push URL, which an encoder can use.
    expect(await getStream(s.id)).toMatchObject({ stream_key: key, rtmp_url: s.rtmp_url });
    const pub = publish({ url: s.rtmp_url, form: "ffmpeg", tags: await fixtureTags(), pace: "fast", unpublishAtEnd: false });
    await pub.started;
    await waitFor(async () => (await getStream(s.id))?.status === "LIVE", { timeoutMs: 15_000, what: "LIVE" });
    expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
    await pub.finished.catch(() => undefined);

    // The recording video carries the key too (video.stream.stream_key): sealed in its stored state as well.
    const recording = await waitFor(async () => (await getStream(s.id))?.recording ?? undefined, { timeoutMs: 15_000, what: "recording" });
    const video = (await ok(t.api(`/videos/${recording.asset_id}/`), "getVideo")).data;
    expect(video.stream).toEqual({ id: s.id, stream_key: key });
    expect(await getStream(s.id)).toMatchObject({ stream_key: key, rtmp_url: s.rtmp_url, status: "ENDED" });
    await assertNowhere();
  }, 60_000);

  test("a database written before sealing is upgraded at start-up: keys sealed, digests made, the stream still publishable", async () => {
    const dataDir = freshDataDir();
    t = await startTestService({ dataDir });
    const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Old" } }), "createLivestream")).data.stream;
    const org = { orgId: t.orgId, apiKey: t.apiKey };
    // What an older version stored: the context in plaintext, and no digest row (its stream_keys table is dropped by the migration).
    const record = (await t.service.runtime.get("livestream", s.id))!;
    await t.stop({ cleanup: false });
    const raw = new LibsqlDatabase(join(dataDir, "service.db"));
    raw.prepare("UPDATE actors SET state = ? WHERE id = ?").run(JSON.stringify({ value: record.value, context: record.context }), s.id);
    raw.exec("DELETE FROM stream_key_digests");
    raw.close();

    t = await startTestService({ dataDir, org });
    const rows = await allRows(t);
    expect(rows.actors).not.toContain(s.stream_key);
    expect(rows.stream_key_digests).toContain(s.id);
    expect(await getStream(s.id)).toMatchObject({ stream_key: s.stream_key, rtmp_url: s.rtmp_url });
    // The restarted service listens on another random RTMP port; the path and signature are what is checked.
    const url = s.rtmp_url.replace(/:\d+\/live\//, `:${t.service.config.rtmpPort}/live/`);
    const pub = publish({ url, form: "obs", tags: (await fixtureTags()).slice(0, 20), pace: "fast" });
    await pub.started;
    await pub.finished.catch(() => undefined);
  }, 60_000);
});

describe("file permissions", () => {
  test("DATA_DIR is created 0700; service.db, -wal, -shm and secret.key are 0600", async () => {
    const dataDir = freshDataDir();
    t = await startTestService({ dataDir });
    expect((await t.api("/livestreams/", { method: "POST", json: { title: "p" } })).status).toBe(201);
    expect(mode(dataDir)).toBe("700");
    for (const f of ["service.db", "service.db-wal", "service.db-shm", "secret.key"]) {
      expect({ f, exists: existsSync(join(dataDir, f)) }).toEqual({ f, exists: true });
      expect({ f, mode: mode(join(dataDir, f)) }).toEqual({ f, mode: "600" });
    }
  });

  test("a DATA_DIR and database files left open by an older version are tightened at start", async () => {
    const dataDir = freshDataDir();
    // The older version is another process that has exited, as a real upgrade's is: its files stay, its locks do not.
    const older = await spawnService({ DATA_DIR: dataDir });
    const org = { orgId: older.orgId, apiKey: older.apiKey };
    await older.stop();
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, "service.db"), 0o644);
    for (const f of ["service.db-wal", "service.db-shm"]) if (!existsSync(join(dataDir, f))) writeFileSync(join(dataDir, f), "");
    for (const f of ["service.db-wal", "service.db-shm"]) chmodSync(join(dataDir, f), 0o644);
    t = await startTestService({ dataDir, org });
    expect(mode(dataDir)).toBe("700");
    for (const f of ["service.db", "service.db-wal", "service.db-shm"]) expect({ f, mode: mode(join(dataDir, f)) }).toEqual({ f, mode: "600" });
  });

  test("the server as `npm start` runs it writes nothing readable by others (uploads included)", async () => {
    const dataDir = freshDataDir();
    const proc = Bun.spawn(["bun", join(import.meta.dir, "../src/main.ts")], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: "", SECRET_KEY: "", PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" },
      stdout: "ignore",
      stderr: "pipe", // the key banner and the API line (the JSON logs are on stdout)
    });
    try {
      const reader = proc.stderr.getReader();
      let out = "";
      const deadline = Date.now() + 30_000;
      while (!/API: (http:\/\/\S+)\/api\/public\/v1\//.test(out) && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        out += new TextDecoder().decode(value);
      }
      reader.releaseLock();
      const base = /API: (http:\/\/\S+)\/api\/public\/v1\//.exec(out)![1]!;
      const key = /API key \(shown once\): (sk_live_\S+)/.exec(out)![1]!;
      const up = await fetch(`${base}/api/public/v1/videos/upload-url/`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
      expect(up.status).toBe(201);
      const put = await fetch((await ok(up, "createUploadUrl")).data.upload_url, { method: "PUT", body: Bun.file(join(import.meta.dir, "../fixtures/av-360p-2s.mp4")) });
      expect(put.status).toBe(200);
      const open: string[] = [];
      const files = [...new Bun.Glob("**/*").scanSync({ cwd: dataDir, onlyFiles: false, dot: true })];
      expect(files.some((f) => f.startsWith("uploads"))).toBe(true);
      for (const f of ["", ...files]) if (statSync(join(dataDir, f)).mode & 0o077) open.push(`${f || "."} ${mode(join(dataDir, f))}`);
      expect(open).toEqual([]);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  }, 60_000);

  test("the operator CLI on an empty DATA_DIR creates nothing there (issue 16: it says there is no database)", async () => {
    const dataDir = freshDataDir();
    const proc = Bun.spawnSync(["bun", join(import.meta.dir, "../src/cli/main.ts"), "org", "create", "--name", "cli", "--json"], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: "" },
      stderr: "pipe",
    });
    expect(proc.exitCode).toBe(2);
    expect(proc.stderr.toString()).toContain("no database at");
    expect(existsSync(join(dataDir, "service.db"))).toBe(false);
  });
});
