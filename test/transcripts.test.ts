import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvTags } from "../media/flv/flv-reader.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import type { Transcriber } from "../media/stt/types.ts";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { createService, type Service } from "../src/service.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { FIXTURES } from "./support/file-server.ts";
import { startS3rver } from "./support/s3rver.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { answer, failed, ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Issue 12 end to end on the native backend with Debian's pocketsphinx: a
 * clip of synthetic speech (espeak-ng, made here) → COMPLETED with a WebVTT
 * transcript, a subtitle rendition in the HLS master, a summary; the same
 * for a DRM video (text AdaptationSet) and a live recording; no engine →
 * 422; subtitles not asked for → both URLs null.
 */
const TEXT = "Hello and welcome. This video is about the weather today. The sun is shining and the sky is blue. Tomorrow there will be rain in the morning.";
const SPOKEN = new Set(TEXT.toLowerCase().match(/[a-z]+/g));
const ready = !!Bun.which("pocketsphinx_continuous") && !!Bun.which("ffmpeg") && (!!Bun.which("espeak-ng") || existsSync(join(FIXTURES, "speech-en-10s.mp4")));

const dir = mkdtempSync(join(tmpdir(), "transcripts-"));
let t: TestService;
let files: ReturnType<typeof Bun.serve>;
const url = (name: string, q = "") => `http://127.0.0.1:${files.port}/${name}${q}`;

async function run(cmd: string[]): Promise<void> {
  const p = Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe" });
  const err = await new Response(p.stderr).text();
  if ((await p.exited) !== 0) throw new Error(`${cmd[0]} failed: ${err}`);
}

/** speech.mp4 (H.264 + AAC, ~10 s of espeak-ng speech over a test pattern) and the same as speech.flv for RTMP. */
async function makeClips(): Promise<void> {
  const mp4 = join(dir, "speech.mp4");
  if (Bun.which("espeak-ng")) {
    await run(["espeak-ng", "-v", "en-us", "-s", "130", "-w", join(dir, "speech.wav"), TEXT]);
    await run([
      "ffmpeg",
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=320x240:rate=25",
      "-i",
      join(dir, "speech.wav"),
      "-shortest",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-pix_fmt",
      "yuv420p",
      "-g",
      "50",
      "-c:a",
      "aac",
      "-b:a",
      "64k",
      mp4,
    ]);
  } else await Bun.write(mp4, Bun.file(join(FIXTURES, "speech-en-10s.mp4")));
  await run(["ffmpeg", "-v", "error", "-y", "-i", mp4, "-c", "copy", "-f", "flv", join(dir, "speech.flv")]);
}

const get = async (id: string, svc: TestService = t) => (await ok(svc.api(`/videos/${id}/`), "getVideo")).data;
const settled = (id: string, svc: TestService = t) =>
  waitFor(
    async () => {
      const d = await get(id, svc);
      return ["COMPLETED", "ERROR"].includes(d.video.status) ? d : undefined;
    },
    { timeoutMs: 60_000, what: `video ${id} settled` },
  );
const register = async (json: Record<string, unknown>, svc: TestService = t) => {
  const res = await svc.api("/videos/", { method: "POST", json });
  return { status: res.status, body: await answer(res, "createVideo") };
};

/** Distinct words of a WebVTT's cue text (lowercase letters only). */
function vttWords(vtt: string): Set<string> {
  const text = vtt
    .split(/\r?\n/)
    .filter((l) => l && !l.includes("-->") && l !== "WEBVTT" && !/^\d+$/.test(l))
    .join(" ");
  return new Set(text.toLowerCase().match(/[a-z]+/g) ?? []);
}

/** Cue [start, end] pairs in seconds. */
function cueTimes(vtt: string): Array<[number, number]> {
  const sec = (s: string) => s.split(":").reduce((acc, p) => acc * 60 + Number(p), 0);
  return [...vtt.matchAll(/(\d[\d:.]*)\s+-->\s+(\d[\d:.]*)/g)].map((m) => [sec(m[1]!), sec(m[2]!)]);
}

beforeAll(async () => {
  if (!ready) return;
  await makeClips();
  files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => new Response(Bun.file(join(dir, new URL(req.url).pathname.slice(1)))) });
  t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
  await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, features: { ...s.features, drm: true } }));
});
afterAll(async () => {
  await t?.stop();
  files?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!ready)("transcripts (pocketsphinx, native ffmpeg)", () => {
  test("subtitles: true → COMPLETED with a WebVTT transcript, a subtitle rendition in the master, a summary", async () => {
    const org = (await ok(t.api("/organization/"), "getOrganization")).data.organization;
    expect(org.features.transcripts).toBe("pocketsphinx");

    const { status, body } = await register({ source_url: url("speech.mp4"), title: "Weather report", subtitles: true });
    expect(status).toBe(201);
    expect(body.data.video).toMatchObject({ transcript_url: null, summary_url: null });
    const id: string = body.data.asset.public_id;
    const done = await settled(id);
    expect(done.error).toBeNull();
    const { video } = done;
    expect(video.transcript_url).toEndWith("/transcript.vtt");
    expect(video.summary_url).toEndWith("/summary.txt");
    // The COMPLETED event carries the same URLs.
    const completed = (await outboxEvents(t.service, id)).find((e) => e.event === "VIDEO_TRANSCODING_COMPLETED")!.data;
    expect(completed.video).toMatchObject({ transcript_url: video.transcript_url, summary_url: video.summary_url });

    // transcript.vtt: valid WebVTT, several spoken words, every cue within the media's duration.
    const vttRes = await fetch(video.transcript_url!);
    expect(vttRes.status).toBe(200);
    expect(vttRes.headers.get("content-type")).toStartWith("text/vtt");
    const vtt = await vttRes.text();
    expect(vtt).toStartWith("WEBVTT");
    const heard = [...vttWords(vtt)].filter((w) => SPOKEN.has(w));
    expect(heard.length).toBeGreaterThanOrEqual(3);
    const cues = cueTimes(vtt);
    expect(cues.length).toBeGreaterThan(0);
    for (const [start, end] of cues) {
      expect(start).toBeGreaterThanOrEqual(0);
      expect(end).toBeGreaterThan(start);
      expect(end).toBeLessThanOrEqual(video.duration_seconds! + 1);
    }

    // summary.txt: non-empty plain text.
    const sumRes = await fetch(video.summary_url!);
    expect(sumRes.status).toBe(200);
    expect(sumRes.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect((await sumRes.text()).trim().length).toBeGreaterThan(0);

    // The master: one SUBTITLES rendition, every variant in its group; its playlist and a segment served.
    const master = await (await fetch(video.url!)).text();
    expect(master).toContain('#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",AUTOSELECT=YES,DEFAULT=NO,URI="subs/en/index.m3u8"');
    const variants = master.split("\n").filter((l) => l.startsWith("#EXT-X-STREAM-INF:"));
    expect(variants.length).toBeGreaterThan(0);
    for (const v of variants) expect(v).toContain('SUBTITLES="subs"');
    const subsUrl = new URL("subs/en/index.m3u8", video.url!);
    const subsRes = await fetch(subsUrl);
    expect(subsRes.status).toBe(200);
    expect(subsRes.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    const subs = await subsRes.text();
    expect(subs).toContain("#EXT-X-ENDLIST");
    const segment = subs.split("\n").find((l) => l.trim() && !l.startsWith("#"))!;
    const segRes = await fetch(new URL(segment, subsUrl));
    expect(segRes.status).toBe(200);
    expect(segRes.headers.get("content-type")).toStartWith("text/vtt");
    expect(await segRes.text()).toStartWith("WEBVTT");

    // Storage: the transcript's bytes are their own key, counted in total_bytes.
    const s = done.storage;
    expect(Number(s!.transcript_bytes)).toBeGreaterThan(0);
    expect(Number(s!.total_bytes)).toBe(Number(s!.hls_bytes) + Number(s!.download_bytes) + Number(s!.original_bytes) + Number(s!.transcript_bytes));
  }, 90_000);

  test("subtitles not asked for → transcript_url and summary_url null, no subtitle rendition", async () => {
    const { body } = await register({ source_url: url("speech.mp4", "?plain=1") });
    const done = await settled(body.data.asset.public_id);
    expect(done.error).toBeNull();
    expect(done.video).toMatchObject({ status: "COMPLETED", transcript_url: null, summary_url: null });
    expect(done.storage!.transcript_bytes).toBeUndefined();
    expect(await (await fetch(done.video.url!)).text()).not.toContain("SUBTITLES");
  }, 90_000);

  test("a DRM video with subtitles: its DASH manifest gets a text/vtt AdaptationSet naming transcript.vtt", async () => {
    const { body } = await register({ source_url: url("speech.mp4", "?drm=1"), drm_enabled: true, subtitles: true });
    const done = await settled(body.data.asset.public_id);
    expect(done.error).toBeNull();
    expect(done.video.url).toEndWith("/dash/manifest.mpd");
    expect(done.video.transcript_url).toEndWith("/transcript.vtt");
    const mpd = await (await fetch(done.video.url!)).text();
    const set = /<AdaptationSet\b[^>]*contentType="text"[^>]*>[\s\S]*?<\/AdaptationSet>/.exec(mpd)?.[0] ?? "";
    expect(set).toContain('mimeType="text/vtt"');
    const base = /<BaseURL>([^<]+)<\/BaseURL>/.exec(set)?.[1];
    expect(base).toBe("../transcript.vtt");
    expect(new URL(base!, done.video.url!).href).toBe(done.video.transcript_url!);
    expect((await (await fetch(done.video.transcript_url!)).text()).startsWith("WEBVTT")).toBe(true);
    expect(Number(done.storage!.total_bytes)).toBe(
      Number(done.storage!.drm_bytes) + Number(done.storage!.download_bytes) + Number(done.storage!.original_bytes) + Number(done.storage!.transcript_bytes),
    );
  }, 90_000);

  test("a live stream with subtitles: true → its recording has a transcript", async () => {
    const created = await ok(t.api("/livestreams/", { method: "POST", json: { title: "Spoken live", subtitles: true } }), "createLivestream");
    const s = created.data.stream;
    // Not a public field of the stream (spec 2.7 lists none): it reaches the recording only.
    expect((s as { subtitles?: unknown }).subtitles).toBeUndefined();
    const tags = [...readFlvTags(new Uint8Array(await Bun.file(join(dir, "speech.flv")).arrayBuffer()))];
    const pub = publish({ url: s.rtmp_url, tags, pace: "realtime", unpublishAtEnd: false });
    await pub.started;
    await waitFor(async () => (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream.status === "LIVE", { timeoutMs: 15_000, what: "LIVE" });
    // The whole clip is sent (at its own pace: a "fast" push left a 2 s recording) before the end, so the recording holds all the speech.
    await waitFor(async () => pub.tagsSent === tags.length, { timeoutMs: 30_000, what: "every tag sent" });
    expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
    await pub.finished.catch(() => undefined);
    const assetId = await waitFor(async () => (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream.recording?.asset_id, { timeoutMs: 15_000, what: "recording" });
    const rec = await settled(assetId);
    expect(rec.error).toBeNull();
    expect(rec.video.kind).toBe("LIVESTREAM_RECORDING");
    expect(rec.video.duration_seconds).toBeGreaterThanOrEqual(8);
    expect(rec.video.transcript_url).toEndWith("/transcript.vtt");
    expect(rec.video.summary_url).toEndWith("/summary.txt");
    const vtt = await (await fetch(rec.video.transcript_url!)).text();
    expect(vtt).toStartWith("WEBVTT");
    expect([...vttWords(vtt)].filter((w) => SPOKEN.has(w)).length).toBeGreaterThanOrEqual(3);
  }, 90_000);
});

/** A service made with a given engine (null: none), on its own DATA_DIR, answering through app.handle. */
async function serviceWith(transcriber: Transcriber | null, env: Record<string, string> = {}): Promise<{ service: Service; api: TestService["api"]; stop: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-stt-"));
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", RTMP_PORT: "0", ALLOW_PRIVATE_NETWORK: "1", LOG_LEVEL: "silent", ...env });
  const service = await createService(config, { logger: silentLogger, transcriber });
  const { org, apiKey } = await service.orgs.createOrg("stt");
  const { port } = await service.listen();
  return {
    service,
    api: (path, init = {}) =>
      fetch(`http://127.0.0.1:${port}/api/public/v1${path}`, {
        method: init.method,
        headers: { authorization: `Bearer ${apiKey}`, ...(init.json ? { "content-type": "application/json" } : {}) },
        body: init.json ? JSON.stringify(init.json) : undefined,
      }),
    stop: async () => {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
      void org;
    },
  };
}

test("no speech-to-text engine: features.transcripts null; subtitles: true → 422 details.subtitles naming what to install, nothing created", async () => {
  const svc = await serviceWith(null);
  try {
    const org = (await ok(svc.api("/organization/"), "getOrganization")).data.organization;
    expect(org.features.transcripts).toBeNull();
    for (const [path, json] of [
      ["/videos/", { source_url: "https://example.com/a.mp4", subtitles: true }],
      ["/livestreams/", { title: "x", subtitles: true }],
    ] as const) {
      const res = await svc.api(path, { method: "POST", json });
      expect(res.status).toBe(422);
      const body = await failed<Record<string, string>>(res);
      expect(body.success).toBe(false);
      expect(body.error.code).toBe("VALIDATION_ERROR");
      expect(Object.keys(body.error.details)).toEqual(["subtitles"]);
      expect(body.error.details.subtitles).toContain("pocketsphinx");
      const list = path === "/videos/" ? (await ok(svc.api(path), "listVideos")).data : (await ok(svc.api(path), "listLivestreams")).data;
      expect(JSON.stringify(list)).not.toContain('"id":"');
    }
    const actors = await svc.service.database.client.execute("SELECT count(*) AS n FROM actors");
    expect(Number(actors.rows[0]!.n)).toBe(0);
    // Without subtitles the same registration is accepted.
    expect((await svc.api("/videos/", { method: "POST", json: { source_url: "https://example.com/a.mp4" } })).status).toBe(201);
  } finally {
    await svc.stop();
  }
}, 120_000);

test.skipIf(!ready)(
  "an engine that fails: the video still completes, without a transcript (urls null)",
  async () => {
    const broken: Transcriber = {
      name: "broken",
      transcribe: async () => {
        throw new Error("engine crashed");
      },
      close: async () => undefined,
    };
    const svc = await serviceWith(broken, { MEDIA_BACKEND: "native" });
    try {
      expect((await ok(svc.api("/organization/"), "getOrganization")).data.organization.features.transcripts).toBe("broken");
      const res = await svc.api("/videos/", { method: "POST", json: { source_url: url("speech.mp4", "?broken=1"), subtitles: true } });
      expect(res.status).toBe(201);
      const id = (await ok(res, "createVideo")).data.asset.public_id;
      const done = await waitFor(
        async () => {
          const d = (await ok(svc.api(`/videos/${id}/`), "getVideo")).data;
          return ["COMPLETED", "ERROR"].includes(d.video.status) ? d : undefined;
        },
        { timeoutMs: 60_000, what: "settled" },
      );
      expect(done.error).toBeNull();
      expect(done.video).toMatchObject({ status: "COMPLETED", transcript_url: null, summary_url: null });
      expect(done.storage!.transcript_bytes).toBeUndefined();
      expect(await (await fetch(done.video.url!)).text()).not.toContain("SUBTITLES");
    } finally {
      await svc.stop();
    }
  },
  90_000,
);

test.skipIf(!ready)(
  "STORAGE=s3: the transcript, summary and subtitle rendition go into the bucket with the ladder and are served from it",
  async () => {
    const s3 = await startS3rver();
    const svc = await startTestService({ env: { ...s3.env, MEDIA_BACKEND: "native" } });
    try {
      const res = await svc.api("/videos/", { method: "POST", json: { source_url: url("speech.mp4", "?s3=1"), subtitles: true } });
      const id = (await ok(res, "createVideo")).data.asset.public_id;
      const done = await settled(id, svc);
      expect(done.error).toBeNull();
      const mediaKey = svc.service.store.mediaKey(id);
      const stored: string[] = [];
      for await (const o of svc.service.objects.list(mediaKey)) stored.push(o.key.slice(mediaKey.length + 1));
      expect(stored).toContain("transcript.vtt");
      expect(stored).toContain("summary.txt");
      expect(stored).toContain("hls/subs/en/index.m3u8");
      expect(stored.some((k) => /^hls\/subs\/en\/.+\.vtt$/.test(k))).toBe(true);
      const vtt = await fetch(done.video.transcript_url!);
      expect([vtt.status, vtt.headers.get("content-type")?.startsWith("text/vtt")]).toEqual([200, true]);
      expect(await (await fetch(done.video.url!)).text()).toContain('URI="subs/en/index.m3u8"');
      expect((await (await fetch(done.video.summary_url!)).text()).trim().length).toBeGreaterThan(0);
    } finally {
      await svc.stop();
      await s3.stop();
    }
  },
  90_000,
);
