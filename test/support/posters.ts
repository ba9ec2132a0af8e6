/** Shared checks of test/posters*.test.ts: what a user verifies of a video's thumbnail and storyboard. */
import { afterAll, beforeAll, expect } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./events.ts";
import { startFileServer } from "./file-server.ts";
import { startTestService, type TestService } from "./test-service.ts";
import { ok } from "./api.ts";

/**
 * A test service on one media backend and the fixtures' file server, for the
 * calling file or describe (registers beforeAll/afterAll): `register` adds a
 * fixture by name as a video, `completed` waits for it.
 */
export function videoBackend(backend: "native" | "wasm") {
  const files = startFileServer();
  const b = {
    t: undefined as unknown as TestService,
    register: (fixture: string, title: string) => register(b.t, files.url(fixture), title),
    completed: (id: string) => completed(b.t, id),
  };
  beforeAll(async () => {
    b.t = await startTestService({ env: { MEDIA_BACKEND: backend } });
  });
  afterAll(async () => {
    await b.t?.stop();
    files.stop();
  });
  return b;
}

export async function register(t: TestService, sourceUrl: string, title: string) {
  const res = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl, title } });
  expect(res.status).toBe(201);
  return (await ok(res, "createVideo")).data;
}

export async function completed(t: TestService, id: string) {
  return waitFor(
    async () => {
      const body = await ok(t.api(`/videos/${id}/`), "getVideo");
      if (body.data.video.status === "ERROR") throw new Error(`video failed: ${JSON.stringify(body.data.error)}`);
      return body.data.video.status === "COMPLETED" ? body.data : undefined;
    },
    { timeoutMs: 60_000, what: `video ${id} COMPLETED` },
  );
}

/** Width and height of an image as the system ffprobe decodes it (throws if it cannot). */
async function probeImage(url: string): Promise<{ width: number; height: number; codec: string; type: string | null }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const file = join(tmpdir(), `poster-${crypto.randomUUID()}.jpg`);
  writeFileSync(file, new Uint8Array(await res.arrayBuffer()));
  const out = Bun.spawnSync(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,codec_name", "-of", "json", file]);
  expect(out.exitCode).toBe(0);
  const s = JSON.parse(out.stdout.toString()).streams[0];
  // Decoding the whole picture (not only the header) must succeed too.
  expect(Bun.spawnSync(["ffmpeg", "-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).exitCode).toBe(0);
  rmSync(file, { force: true });
  return { width: s.width, height: s.height, codec: s.codec_name, type: res.headers.get("content-type") };
}

interface Cue {
  start: number;
  end: number;
  url: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

function parseStoryboard(text: string, base: string): Cue[] {
  expect(text.startsWith("WEBVTT")).toBe(true);
  const sec = (t: string) => {
    const [h, m, s] = t.split(":");
    return Number(h) * 3600 + Number(m) * 60 + Number(s);
  };
  const cues: Cue[] = [];
  for (const block of text.split(/\n\n+/).slice(1)) {
    const lines = block.trim().split("\n");
    if (lines.length < 2) continue;
    const time = /^(\d{2}:\d{2}:\d{2}\.\d{3}) --> (\d{2}:\d{2}:\d{2}\.\d{3})$/.exec(lines[0]!);
    const target = /^(.+)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(lines[1]!);
    expect(time && target).toBeTruthy();
    cues.push({ start: sec(time![1]!), end: sec(time![2]!), url: new URL(target![1]!, base).href, x: +target![2]!, y: +target![3]!, w: +target![4]!, h: +target![5]! });
  }
  return cues;
}

/** Everything a user checks of a video's posters: decodable images of the right size, a storyboard covering the duration inside the sprite. */
export async function checkPosters(data: any, expected: { width: number; height: number; tileHeight: number; duration: number }) {
  const v = data.video;
  expect(v.thumbnail_url).toEndWith("/thumbnail.jpg");
  expect(v.storyboard_url).toEndWith(".vtt");
  // Served under the video's media token, like its renditions.
  const mediaDir = v.url.slice(0, v.url.indexOf("/", v.url.indexOf("/media/") + "/media/".length) + 1);
  expect(v.thumbnail_url.startsWith(mediaDir)).toBe(true);
  expect(v.storyboard_url.startsWith(mediaDir)).toBe(true);

  const thumb = await probeImage(v.thumbnail_url);
  expect(thumb).toMatchObject({ codec: "mjpeg", width: expected.width, height: expected.height, type: "image/jpeg" });

  const vttRes = await fetch(v.storyboard_url);
  expect(vttRes.headers.get("content-type")).toStartWith("text/vtt");
  const cues = parseStoryboard(await vttRes.text(), v.storyboard_url);
  expect(cues.length).toBeGreaterThan(0);
  expect(cues.length).toBeLessThanOrEqual(100);
  // In order, back to back, from 0 to the end of the video.
  expect(cues[0]!.start).toBe(0);
  for (let i = 1; i < cues.length; i++) expect(cues[i]!.start).toBeCloseTo(cues[i - 1]!.end, 3);
  for (const c of cues) expect(c.end).toBeGreaterThan(c.start);
  expect(Math.abs(cues.at(-1)!.end - expected.duration)).toBeLessThan(0.5);

  const spriteUrl = cues[0]!.url;
  expect(new Set(cues.map((c) => c.url))).toEqual(new Set([spriteUrl]));
  const sprite = await probeImage(spriteUrl);
  expect(sprite.codec).toBe("mjpeg");
  for (const c of cues) expect({ w: c.w, h: c.h }).toEqual({ w: 160, h: expected.tileHeight });
  // The sprite is exactly a grid of tiles, and every cue's rectangle lies inside it.
  const columns = Math.max(...cues.map((c) => c.x / c.w)) + 1;
  const rows = Math.max(...cues.map((c) => c.y / c.h)) + 1;
  expect(sprite.width).toBe(columns * 160);
  expect(sprite.height).toBe(rows * expected.tileHeight);
  for (const c of cues) {
    expect(c.x % c.w).toBe(0);
    expect(c.y % c.h).toBe(0);
    expect(c.x + c.w).toBeLessThanOrEqual(sprite.width);
    expect(c.y + c.h).toBeLessThanOrEqual(sprite.height);
  }
  return { cues, mediaDir };
}
