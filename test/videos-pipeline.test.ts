import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { inspectMedia, parsePlaylist } from "./support/media-check.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

const files = startFileServer();
afterAll(() => files.stop());
const native = await hasNativeFfmpeg();

async function completed(t: TestService, id: string, key?: string) {
  return waitFor(
    async () => {
      const b = await ok(t.api(`/videos/${id}/`, { key }), "getVideo");
      return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
    },
    { timeoutMs: 120_000, what: `video ${id} done` },
  );
}

describe.skipIf(!native)("native ffmpeg backend", () => {
  test("same outputs as wasm: HLS rungs, and an encrypted mp4 that opens only with its password", async () => {
    const t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
    try {
      await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, downloads: { rungs: ["top"], format: "mp4-encrypted" } }));
      const r = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("av-720p-3s.mp4") } }), "createVideo");
      const data = await completed(t, r.data.asset.public_id);
      expect(data.video.status).toBe("COMPLETED");
      expect(data.renditions.map((x: any) => x.quality)).toEqual(["360p", "720p"]);
      const events = await outboxEvents(t.service, r.data.asset.public_id);
      expect(events[1]!.data.video.transcoder_id).toStartWith("native");

      const master = parsePlaylist(await (await fetch(data.video.url!)).text());
      const mediaUrl = new URL(master.streams[1]!.uri, data.video.url!);
      const media = parsePlaylist(await (await fetch(mediaUrl)).text());
      const seg = await inspectMedia(await (await fetch(new URL(media.uris[0]!, mediaUrl))).arrayBuffer());
      expect(seg).toMatchObject({ videoCodec: "avc", audioCodec: "aac", height: 720 });

      expect(data.video.download_url).toEndWith(".mp4");
      expect(data.video.download_password).toMatch(/^[0-9a-f]{32}$/);
      const file = join(mkdtempSync(join(tmpdir(), "dl-")), "dl.mp4");
      await Bun.write(file, await (await fetch(data.video.download_url!)).arrayBuffer());
      const decode = (extra: string[]) => Bun.spawnSync(["ffmpeg", "-v", "error", ...extra, "-i", file, "-map", "0:v", "-f", "framemd5", "-"], { stdout: "pipe", stderr: "pipe" });
      const withKey = decode(["-decryption_key", data.video.download_password!]);
      const withoutKey = decode([]);
      expect(withKey.exitCode).toBe(0);
      expect(withKey.stderr.toString()).toBe("");
      // Without the key the frames are garbage: the decoder reports errors or the frames differ.
      const same = withoutKey.exitCode === 0 && withoutKey.stdout.toString() === withKey.stdout.toString() && withoutKey.stderr.toString() === "";
      expect(same).toBe(false);
    } finally {
      await t.stop();
    }
  }, 120_000);
});

test("the queue refusing gives 502 TRANSCODE_QUEUE_FAILED and creates nothing", async () => {
  const t = await startTestService({ env: { TRANSCODE_QUEUE_LIMIT: "0" } });
  try {
    const res = await t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4") } });
    expect(res.status).toBe(502);
    expect((await failed(res)).error.code).toBe("TRANSCODE_QUEUE_FAILED");
    expect((await ok(t.api("/videos/"), "listVideos")).data.items).toEqual([]);
  } finally {
    await t.stop();
  }
});

test("a process killed with SIGKILL mid-transcode: after restart the job resumes and each event fires once", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-kill-"));
  const env = { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", ALLOW_PRIVATE_NETWORK: "1", MEDIA_BACKEND: "wasm", JOB_LEASE_MS: "1500", TRANSCODE_WORKERS: "1" };
  // The key banner is on stderr, the JSON logs on stdout: read both.
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "..", "src", "main.ts")], { env, stdout: "pipe", stderr: "pipe" });
  let out = "";
  const reader = Promise.all(
    [child.stdout, child.stderr].map(async (stream) => {
      for await (const chunk of stream) out += new TextDecoder().decode(chunk);
    }),
  );
  const ready = await waitFor(
    async () => {
      const key = /API key \(shown once\): (sk_live_\S+)/.exec(out)?.[1];
      const org = /Default organization (org_\S+) created/.exec(out)?.[1];
      const port = /"msg":"HTTP API listening","port":(\d+)/.exec(out)?.[1];
      return key && org && port ? { key, org, base: `http://127.0.0.1:${port}` } : undefined;
    },
    { timeoutMs: 60_000, what: "child service" },
  );
  const headers = { authorization: `Bearer ${ready.key}`, "content-type": "application/json" };
  const created = await ok(fetch(`${ready.base}/api/public/v1/videos/`, { method: "POST", headers, body: JSON.stringify({ source_url: files.url("av-720p-3s.mp4") }) }), "createVideo");
  const id = created.data.asset.public_id;
  await waitFor(
    async () => {
      const b = await ok(fetch(`${ready.base}/api/public/v1/videos/${id}/`, { headers }), "getVideo");
      return b.data.video.transcoder_id ? true : undefined;
    },
    { timeoutMs: 30_000, what: "transcode started" },
  );
  child.kill(9);
  await child.exited;
  await reader.catch(() => undefined);

  const t = await startTestService({ dataDir, org: { orgId: ready.org, apiKey: ready.key }, env: { MEDIA_BACKEND: "wasm", JOB_LEASE_MS: "1500" } });
  await t.service.orgs.updateSettings(ready.org, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 100_000 } }));
  try {
    const data = await completed(t, id);
    expect(data.video.status).toBe("COMPLETED");
    expect(data.renditions.map((x: any) => x.quality)).toEqual(["360p", "720p"]);
    const events = (await outboxEvents(t.service, id)).map((e) => e.event);
    expect(events).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
  } finally {
    await t.stop();
  }
}, 150_000);
