import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createSocket } from "node:dgram";
import { outboxEvents, waitFor } from "./support/events.ts";
import { inspectFirstSegment, parsePlaylist } from "./support/media-check.ts";
import { getStream, streamIn } from "./support/streams.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";
import { testEncoderArgs } from "./support/test-encoder.ts";

setDefaultTimeout(120_000);

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { LIVE_RECONNECT_MS: "60000" } });
});
afterAll(() => t.stop());

async function createStream(title: string) {
  const res = await t.api("/livestreams/", { method: "POST", json: { title } });
  expect(res.status).toBe(201);
  return (await ok(res, "createLivestream")).data.stream;
}

/** ffmpeg as an SRT encoder: a test pattern and a tone, H.264 + AAC in MPEG-TS, in real time. */
function ffmpegSrt(url: string, seconds: number) {
  return Bun.spawn(testEncoderArgs(url, { seconds, format: "mpegts" }), { stderr: "pipe" });
}

const udpGarbage = async (port: number) => {
  const sock = createSocket("udp4");
  for (let i = 0; i < 1000; i++) sock.send(crypto.getRandomValues(new Uint8Array(1 + ((i * 37) % 1400))), port, "127.0.0.1");
  await Bun.sleep(300);
  sock.close();
};

describe("SRT ingest", () => {
  test("features.srt, and the stream's srt_url for ffmpeg and OBS", async () => {
    const org = await ok(t.api("/organization/"), "getOrganization");
    expect(org.data.organization.features.srt).toBe(true);
    const s = await createStream("SRT shape");
    expect(s.srt_url).toBe(`srt://localhost:${t.service.config.srtPort}?streamid=publish:${s.stream_key}`);
    expect((await getStream(t, s.id)).srt_url).toBe(s.srt_url);
  });

  test("garbage on the port harms nobody, then ffmpeg over SRT goes LIVE, plays as live HLS, and ends in a transcoded recording of its duration", async () => {
    const s = await createStream("Over SRT");
    await udpGarbage(t.service.config.srtPort!);
    expect((await t.api("/organization/")).status).toBe(200);

    const ff = ffmpegSrt(s.srt_url!.replace("//localhost:", "//127.0.0.1:"), 8);
    const live = await streamIn(t, s.id, ["LIVE"], 60_000);
    expect(live.started_at).toBeString();
    const playlist = await waitFor(
      async () => {
        const r = await fetch(s.hls_url);
        if (!r.ok) return undefined;
        const text = await r.text();
        return parsePlaylist(text).uris.length > 0 ? text : undefined;
      },
      { timeoutMs: 60_000, what: "live playlist with a segment" },
    );
    const seg = await inspectFirstSegment(s.hls_url, playlist);
    expect(seg.videoCodec).toBe("avc");
    expect(seg.width).toBe(640);

    expect(await ff.exited).toBe(0);
    const end = await t.api(`/livestreams/${s.id}/end/`, { method: "POST" });
    expect(end.status).toBe(200);
    const ended = await streamIn(t, s.id, ["ENDED"], 60_000);
    const recording = await waitFor(async () => (await getStream(t, s.id)).recording ?? undefined, { timeoutMs: 60_000, what: "recording" });
    expect(recording).toMatchObject({ resolution: "640x360" });
    expect(ended.status).toBe("ENDED");
    const video = await waitFor(
      async () => {
        const b = await ok(t.api(`/videos/${recording.asset_id}/`), "getVideo");
        return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data.video : undefined;
      },
      { timeoutMs: 120_000, what: "recording transcode" },
    );
    expect(video).toMatchObject({ status: "COMPLETED", kind: "LIVESTREAM_RECORDING" });
    // 8 s published (the first keyframe and the caller's last packets may shave a little).
    expect(video.duration_seconds).toBeGreaterThanOrEqual(6);
    expect(video.duration_seconds).toBeLessThanOrEqual(10);

    const events = (await outboxEvents(t.service, s.id)).map((e) => e.event);
    expect(events.slice(0, 3)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED"]);
  }, 300_000);

  test("a wrong key is refused: ffmpeg exits with an error and the stream stays READY_TO_STREAM", async () => {
    const s = await createStream("Wrong key");
    const url = s.srt_url!.replace("//localhost:", "//127.0.0.1:").replace(/publish:.*$/, `publish:${"x".repeat(s.stream_key.length)}`);
    const ff = ffmpegSrt(url, 4);
    const code = await Promise.race([ff.exited, Bun.sleep(60_000).then(() => "still running")]);
    expect(code).not.toBe(0);
    expect(code).not.toBe("still running");
    expect((await getStream(t, s.id)).status).toBe("READY_TO_STREAM");
    expect(await outboxEvents(t.service, s.id).then((e) => e.map((x) => x.event))).toEqual(["LIVESTREAM_SCHEDULED"]);
  });
});

describe("SRT ingest under the RTMP admission rules", () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startTestService({ env: { RTMP_MAX_CONNECTIONS_PER_IP: "1", RTMP_PUBLISH_DEADLINE_MS: "3000", LIVE_RECONNECT_MS: "60000" } });
  });
  afterAll(() => limited.stop());

  const create = async (title: string) => (await ok(limited.api("/livestreams/", { method: "POST", json: { title } }), "createLivestream")).data.stream;
  const local = (url: string) => url.replace("//localhost:", "//127.0.0.1:");

  test("one ingest connection per address: a second SRT caller from it is refused while the first stays LIVE", async () => {
    const a = await create("First");
    const b = await create("Second");
    const first = ffmpegSrt(local(a.srt_url!), 30);
    try {
      await streamIn(limited, a.id, ["LIVE"], 60_000);
      const second = ffmpegSrt(local(b.srt_url!), 4);
      const code = await Promise.race([second.exited, Bun.sleep(60_000).then(() => "still running")]);
      expect(code).not.toBe(0);
      expect(code).not.toBe("still running");
      expect((await getStream(limited, b.id)).status).toBe("READY_TO_STREAM");
      expect((await getStream(limited, a.id)).status).toBe("LIVE");
    } finally {
      first.kill();
      await first.exited;
    }
  });

  test("the publish deadline: a caller with the right key that sends no H.264 is closed", async () => {
    const s = await create("Audio only");
    // Seat of the previous test's caller released first.
    await Bun.sleep(1000);
    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=440:duration=30", "-c:a", "aac", "-f", "mpegts", local(s.srt_url!)], { stderr: "pipe" });
    const code = await Promise.race([ff.exited, Bun.sleep(25_000).then(() => "still running")]);
    if (code === "still running") ff.kill();
    expect(code).not.toBe("still running");
    expect(code).not.toBe(0);
    expect((await getStream(limited, s.id)).status).not.toBe("LIVE");
  });
});

describe("without SRT ingest", () => {
  test("SRT_PORT=off: features.srt is false and srt_url null", async () => {
    const off = await startTestService({ env: { SRT_PORT: "off" } });
    try {
      const org = await ok(off.api("/organization/"), "getOrganization");
      expect(org.data.organization.features.srt).toBe(false);
      const s = (await ok(off.api("/livestreams/", { method: "POST", json: { title: "No SRT" } }), "createLivestream")).data.stream;
      expect(s.srt_url).toBeNull();
    } finally {
      await off.stop();
    }
  });
});

describe("SRT ingest under the bitrate cap", () => {
  test("a caller over LIVE_MAX_BITRATE_KBPS is disconnected (the relay's RTMP connection is metered by stream key)", async () => {
    const capped = await startTestService({ env: { LIVE_MAX_BITRATE_KBPS: "300", LIVE_RECONNECT_MS: "60000" } });
    try {
      const s = (await ok(capped.api("/livestreams/", { method: "POST", json: { title: "Too fast" } }), "createLivestream")).data.stream;
      // Noise does not compress: several Mbit/s for 40 s.
      const ff = Bun.spawn(
        [
          "ffmpeg",
          "-v",
          "error",
          "-re",
          "-f",
          "lavfi",
          "-i",
          "testsrc=size=640x360:rate=30:duration=40",
          "-vf",
          "noise=alls=100:allf=t",
          "-c:v",
          "libx264",
          "-preset",
          "ultrafast",
          "-g",
          "30",
          "-pix_fmt",
          "yuv420p",
          "-f",
          "mpegts",
          s.srt_url!.replace("//localhost:", "//127.0.0.1:"),
        ],
        { stderr: "pipe" },
      );
      const code = await Promise.race([ff.exited, Bun.sleep(35_000).then(() => "still running")]);
      if (code === "still running") ff.kill();
      expect(code).not.toBe("still running");
      expect(code).not.toBe(0);
    } finally {
      await capped.stop();
    }
  });
});
