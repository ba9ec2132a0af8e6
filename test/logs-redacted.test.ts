import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { createLogger } from "../src/log.ts";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

const FIXTURES = join(import.meta.dir, "../fixtures");
const lines: string[] = [];
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ env: { LOG_LEVEL: "debug" }, logger: createLogger({ level: "debug", write: (l) => lines.push(l) }) });
});
afterAll(() => t.stop());

async function json(res: Response) {
  // Untyped on purpose: this helper reads every route the test calls (success or error) and the test walks the answer by key; the typed readers are test/support/api.ts.
  return { status: res.status, body: (await res.json()) as any };
}

async function broadcast(form: "ffmpeg" | "obs") {
  const s = (await json(await t.api("/livestreams/", { method: "POST", json: { title: `Logged ${form}` } }))).body.data.stream;
  // A refused attempt (wrong signature) is logged too.
  const bad = publish({ url: s.rtmp_url.replace(/sig=[0-9a-f]+/, "sig=" + "0".repeat(32)), form, tags: [] });
  await expect(bad.started).rejects.toThrow();
  const pub = publish({ url: s.rtmp_url, form, tags: await fixtureTags(), pace: "fast", unpublishAtEnd: false });
  await pub.started;
  await waitFor(async () => (await json(await t.api(`/livestreams/${s.id}/`))).body.data.stream.status === "LIVE", { timeoutMs: 15_000, what: "LIVE" });
  expect((await t.api(`/livestreams/${s.id}/end/`, { method: "POST" })).status).toBe(200);
  await pub.finished.catch(() => undefined);
  return s as { stream_key: string; rtmp_url: string };
}

test("at LOG_LEVEL=debug, no stream key, rtmp_url signature, upload signature or API key reaches the log", async () => {
  // An upload: presign, PUT, register, transcode.
  const up = (await json(await t.api("/videos/upload-url/", { method: "POST", json: {} }))).body.data;
  const uploadSig = new URL(up.upload_url).searchParams.get("sig")!;
  expect(uploadSig.length).toBeGreaterThanOrEqual(32);
  expect((await fetch(up.upload_url, { method: "PUT", body: Bun.file(`${FIXTURES}/av-360p-2s.mp4`) })).status).toBe(200);
  // A second PUT of a used URL and a forged one: failure paths log as well.
  await fetch(up.upload_url, { method: "PUT", body: "x" });
  await fetch(up.upload_url.replace(/sig=[0-9a-f]/, "sig=z"), { method: "PUT", body: "x" });
  const registered = await json(await t.api("/videos/", { method: "POST", json: { source_url: up.source_url } }));
  expect(registered.status).toBe(201);
  const videoId = registered.body.data.asset.public_id;
  await waitFor(async () => ["COMPLETED", "ERROR"].includes((await json(await t.api(`/videos/${videoId}/`))).body.data.video.status), { timeoutMs: 90_000, what: "transcode" });

  // Two broadcasts, one per URL form (OBS sends the key and signature in the connect's tcUrl and app).
  const streams = [await broadcast("ffmpeg"), await broadcast("obs")];
  await Bun.sleep(200);

  const log = lines.join("\n");
  const entries = lines.map((l) => JSON.parse(l));
  // The run was logged in detail: RTMP connects, publishes, transcoder lines, requests.
  expect(entries.some((e) => e.level === "debug" && e.event === "rtmp.connect")).toBe(true);
  expect(entries.some((e) => e.msg === "Publish accepted")).toBe(true);
  expect(entries.some((e) => e.msg === "Publish refused")).toBe(true);
  expect(entries.some((e) => e.msg === "Transcode started")).toBe(true);

  const apiSecret = t.apiKey.split("_")[3]!;
  const secrets: Record<string, string> = { uploadSig, apiSecret };
  streams.forEach((s, i) => {
    secrets[`streamKey${i}`] = s.stream_key;
    secrets[`rtmpSig${i}`] = new URL(s.rtmp_url.replace(/^rtmp:/, "http:")).searchParams.get("sig")!;
  });
  for (const [name, secret] of Object.entries(secrets)) expect({ name, inLog: log.includes(secret) }).toEqual({ name, inLog: false });
  // What is redacted stays recognisable.
  expect(log).toContain("[redacted]");
}, 150_000);
