import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../src/log.ts";
import { failed, ok } from "./support/api.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { freeTcpPort } from "./support/free-port.ts";
import { testEncoderArgs } from "./support/test-encoder.ts";

setDefaultTimeout(120_000);

// Issue 26 item 2: simulcast targets, with ffmpeg as the receiving platform.
let t: TestService;
const lines: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "outputs-"));
const children: Array<{ kill(signal?: number): void }> = [];

beforeAll(async () => {
  t = await startTestService({ env: { LOG_LEVEL: "debug", LIVE_RECONNECT_MS: "60000" }, logger: createLogger({ level: "debug", write: (l) => lines.push(l) }) });
});
afterAll(async () => {
  for (const c of children) c.kill(9);
  await t.stop();
});

/** ffmpeg as the platform: accepts one publisher and copies what arrives into `file`. */
function receiver(input: string[], file: string) {
  const child = Bun.spawn(["ffmpeg", "-v", "error", ...input, "-c", "copy", "-y", file], { stdout: "ignore", stderr: "pipe" });
  children.push(child);
  return child;
}
const rtmpReceiver = (port: number, key: string, file: string) => receiver(["-listen", "1", "-i", `rtmp://127.0.0.1:${port}/app/${key}`], file);
const srtReceiver = (port: number, file: string) => receiver(["-f", "mpegts", "-i", `srt://127.0.0.1:${port}?mode=listener`], file);

/** ffmpeg as the encoder: a small test pattern and a tone, H.264 + AAC over RTMP, in real time. */
function encoder(rtmpUrl: string, seconds: number) {
  const child = Bun.spawn(["nice", "-n", "5", ...testEncoderArgs(rtmpUrl, { seconds, format: "flv", size: "320x180", rate: 15, preset: "ultrafast" })], { stdout: "ignore", stderr: "ignore" });
  children.push(child);
  return child;
}

async function probe(file: string): Promise<{ duration: number; codecs: string[] }> {
  const p = Bun.spawn(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_name", "-of", "json", file], { stdout: "pipe" });
  const out = JSON.parse(await new Response(p.stdout).text()) as { format: { duration: string }; streams: Array<{ codec_name: string }> };
  return { duration: Number(out.format.duration), codecs: out.streams.map((s) => s.codec_name).sort() };
}

async function createStream(json: Record<string, unknown>) {
  const res = await t.api("/livestreams/", { method: "POST", json });
  expect(res.status).toBe(201);
  return (await ok(res, "createLivestream")).data.stream;
}

const outputsOf = async (id: string) => (await ok(t.api(`/livestreams/${id}/outputs/`), "listLivestreamOutputs")).data.outputs;
const outputIn = (streamId: string, outputId: string, statuses: string[], timeoutMs = 60_000) =>
  waitFor(
    async () => {
      const o = (await outputsOf(streamId)).find((x) => x.id === outputId);
      return o && statuses.includes(o.status) ? o : undefined;
    },
    { timeoutMs, what: `output ${outputId} in ${statuses}` },
  );

describe("simulcast outputs", () => {
  test("a broadcast is copied to an RTMP target and an SRT target with its duration; the keys are never shown nor logged", async () => {
    const rtmpPort = await freeTcpPort();
    const srtPort = await freeTcpPort();
    const rtmpKey = `rtmpkey${crypto.randomUUID().replaceAll("-", "")}`;
    const srtKey = `srtkey${crypto.randomUUID().replaceAll("-", "")}`;
    const rtmpFile = join(dir, "rtmp.flv");
    const srtFile = join(dir, "srt.ts");
    const rtmpIn = rtmpReceiver(rtmpPort, rtmpKey, rtmpFile);
    const srtIn = srtReceiver(srtPort, srtFile);

    // One target with the stream's creation (key in the URL), one added after (key apart, SRT's streamid).
    const s = await createStream({ title: "Simulcast", outputs: [{ url: `rtmp://127.0.0.1:${rtmpPort}/app/${rtmpKey}`, name: "Platform A" }] });
    expect(s.outputs).toHaveLength(1);
    expect(s.outputs[0]).toMatchObject({ name: "Platform A", url: `rtmp://127.0.0.1:${rtmpPort}/app/***`, status: "idle", bytes_sent: 0, started_at: null, last_error: null });
    const added = await t.api(`/livestreams/${s.id}/outputs/`, { method: "POST", json: { url: `srt://127.0.0.1:${srtPort}`, stream_key: srtKey } });
    expect(added.status).toBe(201);
    const srtOut = (await ok(added, "addLivestreamOutput")).data.output;
    expect(srtOut.url).toBe(`srt://127.0.0.1:${srtPort}?streamid=***`);

    const seconds = 6;
    const enc = encoder(s.rtmp_url, seconds);
    await streamIn(t, s.id, ["LIVE"], 60_000);
    const active = await outputIn(s.id, srtOut.id, ["active"]);
    expect(active.started_at).toBeString();
    await outputIn(s.id, s.outputs[0]!.id, ["active"]);
    await enc.exited;
    await ok(t.api(`/livestreams/${s.id}/end/`, { method: "POST" }), "endLivestream");
    // The end of the broadcast ends each target's stream: the receivers finish their files.
    await Promise.all([rtmpIn.exited, srtIn.exited]);

    for (const file of [rtmpFile, srtFile]) {
      const media = await probe(file);
      expect(media.codecs).toEqual(["aac", "h264"]);
      // About the broadcast's duration (the first keyframe after the target connected onward).
      expect(media.duration).toBeGreaterThan(seconds - 2.5);
      expect(media.duration).toBeLessThan(seconds + 1.5);
    }
    const outs = await outputsOf(s.id);
    expect(outs.map((o) => o.status)).toEqual(["stopped", "stopped"]);
    for (const o of outs) expect(o.bytes_sent).toBeGreaterThan(50_000);
    const stream = (await ok(t.api(`/livestreams/${s.id}/`), "getLivestream")).data.stream;
    expect(stream.outputs.map((o) => o.id)).toEqual(outs.map((o) => o.id));

    const events = (await outboxEvents(t.service, s.id)).filter((e) => e.event.startsWith("LIVESTREAM_OUTPUT_"));
    expect(
      events
        .filter((e) => e.event === "LIVESTREAM_OUTPUT_ACTIVE")
        .map((e) => e.data.output.id)
        .sort(),
    ).toEqual(outs.map((o) => o.id).sort());
    expect(events[0]!.data).toMatchObject({ stream_id: s.id, output: { status: "active" } });

    // At rest: the targets are sealed (the row's url is the shown form), and no event payload holds a key.
    const rows = await t.service.database.client.execute("SELECT * FROM live_outputs");
    expect(rows.rows.map((r) => String(r.sealed_target))).toEqual([expect.stringMatching(/^v1\./), expect.stringMatching(/^v1\./)]);
    const atRest = JSON.stringify(rows.rows) + JSON.stringify((await t.service.database.client.execute("SELECT payload FROM outbox")).rows);
    expect(atRest).not.toContain(rtmpKey);
    expect(atRest).not.toContain(srtKey);
    // Neither key anywhere a user or an operator reads: answers, events, logs.
    const seen = JSON.stringify({ outs, stream, events }) + lines.join("\n");
    expect(seen).not.toContain(rtmpKey);
    expect(seen).not.toContain(srtKey);
    expect(lines.some((l) => l.includes("Simulcast output active"))).toBe(true);
  });

  test("a target that dies and comes back is reconnected; a deleted output stops within 2 s", async () => {
    const port = await freeTcpPort();
    const s = await createStream({ title: "Flaky target" });
    const enc = encoder(s.rtmp_url, 60);
    await streamIn(t, s.id, ["LIVE"], 60_000);
    // Added while live, to a platform not up yet: it fails, then retries.
    const out = (await ok(t.api(`/livestreams/${s.id}/outputs/`, { method: "POST", json: { url: `rtmp://127.0.0.1:${port}/app`, stream_key: "k1" } }), "addLivestreamOutput")).data.output;
    const down = await outputIn(s.id, out.id, ["reconnecting"]);
    expect(down.last_error).toBeString();
    let platform = rtmpReceiver(port, "k1", join(dir, "flaky-1.flv"));
    await outputIn(s.id, out.id, ["active"]);
    // The platform goes away: the output reconnects to it once it is back.
    platform.kill(9);
    await outputIn(s.id, out.id, ["reconnecting"]);
    platform = rtmpReceiver(port, "k1", join(dir, "flaky-2.flv"));
    await outputIn(s.id, out.id, ["active"]);
    const events = (await outboxEvents(t.service, s.id)).map((e) => e.event).filter((e) => e.startsWith("LIVESTREAM_OUTPUT_"));
    expect(events).toEqual(["LIVESTREAM_OUTPUT_FAILED", "LIVESTREAM_OUTPUT_ACTIVE", "LIVESTREAM_OUTPUT_FAILED", "LIVESTREAM_OUTPUT_ACTIVE"]);

    // Deleted: the connection to the platform ends (its ffmpeg sees the end) within 2 s.
    const at = Date.now();
    const del = await t.api(`/livestreams/${s.id}/outputs/${out.id}/`, { method: "DELETE" });
    expect(del.status).toBe(200);
    await platform.exited;
    expect(Date.now() - at).toBeLessThan(2000);
    expect((await t.api(`/livestreams/${s.id}/outputs/${out.id}/`)).status).toBe(404);
    enc.kill(9);
    await ok(t.api(`/livestreams/${s.id}/end/`, { method: "POST" }), "endLivestream");
  });

  test("refusals: a sixth output, a bad target, another organization's stream", async () => {
    const targets = Array.from({ length: 6 }, (_, i) => ({ url: `rtmp://127.0.0.1:9/app/k${i}` }));
    const tooMany = await t.api("/livestreams/", { method: "POST", json: { title: "Six", outputs: targets } });
    expect(tooMany.status).toBe(422);
    expect((await failed(tooMany)).error.details).toHaveProperty("outputs");

    const s = await createStream({ title: "Five", outputs: targets.slice(0, 5) });
    expect(s.outputs).toHaveLength(5);
    const sixth = await t.api(`/livestreams/${s.id}/outputs/`, { method: "POST", json: targets[5] });
    expect(sixth.status).toBe(422);
    expect((await failed(sixth)).error.details).toHaveProperty("outputs");
    expect(await outputsOf(s.id)).toHaveLength(5);

    for (const url of ["http://127.0.0.1/app", "rtmp://127.0.0.1", "srt://127.0.0.1", "rtmp://user:pw@127.0.0.1/app/k"]) {
      const bad = await t.api(`/livestreams/${s.id}/outputs/`, { method: "POST", json: { url } });
      expect(bad.status).toBe(422);
      expect((await failed(bad)).error.details).toHaveProperty("url");
    }

    // Another organization: its stream is 404 on every route, as a missing one.
    const other = await t.service.orgs.createOrg("other");
    const as = (path: string, init: RequestInit & { json?: unknown } = {}) => t.api(path, { ...init, key: other.apiKey });
    const outId = s.outputs[0]!.id;
    expect((await as(`/livestreams/${s.id}/outputs/`)).status).toBe(404);
    expect((await as(`/livestreams/${s.id}/outputs/`, { method: "POST", json: { url: "rtmp://127.0.0.1:9/app/x" } })).status).toBe(404);
    expect((await as(`/livestreams/${s.id}/outputs/${outId}/`)).status).toBe(404);
    expect((await as(`/livestreams/${s.id}/outputs/${outId}/`, { method: "DELETE" })).status).toBe(404);
    expect(await outputsOf(s.id)).toHaveLength(5);
  });

  test("without ALLOW_PRIVATE_NETWORK a private or loopback target is refused", async () => {
    const strict = await startTestService({ listen: false, env: { ALLOW_PRIVATE_NETWORK: "0" } });
    try {
      for (const url of ["rtmp://127.0.0.1/app/k", "rtmps://10.1.2.3:443/app/k", "srt://[::1]:9000", "rtmp://localhost/app/k"]) {
        const res = await strict.api("/livestreams/", { method: "POST", json: { title: "Private", outputs: [{ url }] } });
        expect(res.status).toBe(422);
        expect((await failed(res)).error.details).toHaveProperty("outputs");
      }
      const s = (await ok(strict.api("/livestreams/", { method: "POST", json: { title: "Public only" } }), "createLivestream")).data.stream;
      const res = await strict.api(`/livestreams/${s.id}/outputs/`, { method: "POST", json: { url: "rtmp://192.168.1.10/app", stream_key: "k" } });
      expect(res.status).toBe(422);
      expect((await failed(res)).error.details).toHaveProperty("url");
    } finally {
      await strict.stop();
    }
  });
});
