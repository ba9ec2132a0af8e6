import { expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

/**
 * Issue 23 item 9: where WebRTC cannot run, a stream's `whip_url` and
 * `whep_url` are null (in every answer that carries a stream), GET
 * /organization/ says `features.webrtc: false`, and the routes (beside
 * `hls_url`) answer 503 WEBRTC_UNAVAILABLE. Two ways to be off: no worker
 * binary at start, and a worker that cannot run once tried. Runs everywhere
 * (no worker needed).
 */

async function withWorkerBin<T>(bin: string, run: () => Promise<T>): Promise<T> {
  const saved = process.env.MEDIASOUP_WORKER_BIN;
  process.env.MEDIASOUP_WORKER_BIN = bin;
  try {
    return await run();
  } finally {
    if (saved === undefined) delete process.env.MEDIASOUP_WORKER_BIN;
    else process.env.MEDIASOUP_WORKER_BIN = saved;
  }
}

const webrtcFeature = async (t: TestService) => (await ok(t.api("/organization/"), "getOrganization")).data.organization.features.webrtc;

/** Every answer that carries the stream: create, get, list, schedule, end. */
async function streamsEverywhere(t: TestService) {
  const created = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "No WebRTC" } }), "createLivestream")).data.stream;
  const got = (await ok(t.api(`/livestreams/${created.id}/`), "getLivestream")).data.stream;
  const listed = (await ok(t.api("/livestreams/"), "listLivestreams")).data.items.find((s: any) => s.id === created.id);
  const scheduledAt = new Date(Date.now() + 3_600_000).toISOString();
  const booked = (await ok(t.api("/livestreams/schedule/", { method: "POST", json: { title: "Later", scheduled_at: scheduledAt } }), "scheduleLivestream")).data.stream;
  const ended = (await ok(t.api(`/livestreams/${created.id}/end/`, { method: "POST" }), "endLivestream")).data.stream;
  return { created, all: [created, got, listed, booked, ended] };
}

test("without the mediasoup worker: whip_url and whep_url are null, features.webrtc is false, the routes answer 503 WEBRTC_UNAVAILABLE", async () => {
  const t = await withWorkerBin("/nonexistent/mediasoup-worker", () => startTestService());
  try {
    expect(await webrtcFeature(t)).toBe(false);
    const { created, all } = await streamsEverywhere(t);
    for (const s of all) {
      expect(s).toMatchObject({ whip_url: null, whep_url: null, webrtc_viewers: 0, webrtc_transcode: null });
      expect(typeof s!.hls_url).toBe("string");
    }
    // A client that builds the URL from hls_url anyway is told why.
    const base = created.hls_url.replace(/\/index\.m3u8$/, "");
    const whip = await fetch(`${base}/whip`, { method: "POST", headers: { authorization: `Bearer ${created.stream_key}`, "content-type": "application/sdp" }, body: "v=0\r\n" });
    expect(whip.status).toBe(503);
    const body = await failed(whip, "createWhipSession");
    expect(body).toMatchObject({ success: false, error: { code: "WEBRTC_UNAVAILABLE" } });
    expect(body.message).toContain("npm run setup:webrtc");
    const whep = await fetch(`${base}/whep`, { method: "POST", headers: { "content-type": "application/sdp" }, body: "v=0\r\n" });
    expect(whep.status).toBe(503);
    expect(whep.headers.get("access-control-allow-origin")).toBe("*");
  } finally {
    await t.stop({ cleanup: true });
  }
}, 60_000);

test("a worker binary that cannot run: the URLs are there until it is tried, then null, and features.webrtc turns false", async () => {
  const dir = mkdtempSync(join(tmpdir(), "webrtc-off-"));
  // Executable, so the start-up file check passes, but not a mediasoup worker: it exits at once.
  const bin = join(dir, "mediasoup-worker");
  writeFileSync(bin, "#!/bin/sh\nexit 1\n");
  chmodSync(bin, 0o755);
  const t = await withWorkerBin(bin, () => startTestService());
  try {
    expect(await webrtcFeature(t)).toBe(true);
    const s = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Broken worker" } }), "createLivestream")).data.stream;
    expect(s.whip_url).toBe(s.hls_url.replace(/index\.m3u8$/, "whip"));
    expect(s.whep_url).toBe(s.hls_url.replace(/index\.m3u8$/, "whep"));
    const whep = await fetch(s.whep_url!, { method: "POST", headers: { "content-type": "application/sdp" }, body: "v=0\r\n" });
    expect(whep.status).toBe(503);
    expect((await failed(whep, "createWhepSession")).error.code).toBe("WEBRTC_UNAVAILABLE");
    expect(await webrtcFeature(t)).toBe(false);
    const after = (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream;
    expect(after).toMatchObject({ whip_url: null, whep_url: null });
  } finally {
    await t.stop({ cleanup: true });
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
