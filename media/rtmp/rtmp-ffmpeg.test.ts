/**
 * Interop with a real encoder: Debian's native ffmpeg pushing the fixture.
 * Skipped only when ffmpeg is not installed.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { decodeAmf0 } from "./amf0.ts";
import { countByType, FIXTURE_PATH, fixtureTags, startTestServer, waitFor, withTimeout, type TestServer } from "./test-support.ts";

setDefaultTimeout(120_000);

const ffmpeg = Bun.which("ffmpeg");
const tags = await fixtureTags();
let s: TestServer | null = null;
afterEach(async () => {
  await s?.server.stop();
  s = null;
});

function pushWithFfmpeg(url: string, realtime: boolean) {
  const args = [ffmpeg!, "-hide_banner", "-nostdin", "-loglevel", "error", ...(realtime ? ["-re"] : []), "-i", FIXTURE_PATH, "-c", "copy", "-f", "flv", url];
  return Bun.spawn(args, { stdout: "ignore", stderr: "pipe" });
}

describe.skipIf(!ffmpeg)("native ffmpeg as the encoder", () => {
  test("ffmpeg -re publishes the fixture; every audio/video tag arrives byte-identical", async () => {
    s = await startTestServer();
    const proc = pushWithFfmpeg(s.url("FFKEY", "?sig=s1"), true);
    const code = await withTimeout(proc.exited, 20_000, "ffmpeg");
    expect({ code, stderr: await new Response(proc.stderr).text() }).toEqual({ code: 0, stderr: "" });

    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]!).toMatchObject({ app: "live", streamKey: "FFKEY", raw: { app: "live", name: "FFKEY?sig=s1" } });
    expect(s.requests[0]!.query.get("sig")).toBe("s1");

    const sink = s.sinks[0]!;
    expect(await withTimeout(sink.closed, 2000, "onClose")).toBe("unpublish");
    expect(countByType(sink.messages)).toEqual(countByType(tags));
    for (const type of ["audio", "video"] as const) {
      const sent = tags.filter((t) => t.type === type);
      const got = sink.messages.filter((m) => m.type === type);
      got.forEach((m, i) => {
        expect(m.timestamp).toBe(sent[i]!.timestamp);
        expect(Buffer.compare(m.payload, sent[i]!.payload)).toBe(0);
      });
    }
    expect(sink.messages.find((m) => m.type === "video")!.payload.subarray(0, 2)).toEqual(new Uint8Array([0x17, 0x00]));
    // ffmpeg rewrites metadata values (duration...), but it must be a plain onMetaData script body.
    const data = sink.messages.find((m) => m.type === "data")!;
    expect(decodeAmf0(data.payload)[0]).toBe("onMetaData");
  }, 120_000);

  test("a refused ffmpeg exits with an error and no media is accepted", async () => {
    s = await startTestServer();
    s.decide = () => ({ ok: false, reason: "bad signature" });
    const proc = pushWithFfmpeg(s.url("FFKEY", "?sig=wrong"), false);
    const code = await withTimeout(proc.exited, 10_000, "ffmpeg");
    const stderr = await new Response(proc.stderr).text();
    expect(code).not.toBe(0);
    expect(stderr).toContain("bad signature");
    expect(s.requests).toHaveLength(1);
    expect(s.sinks).toHaveLength(0);
  });

  test('ffmpeg killed with SIGKILL mid-stream → onClose("disconnect") at once', async () => {
    s = await startTestServer();
    const proc = pushWithFfmpeg(s.url(), true);
    await waitFor(() => (s!.sinks[0]?.messages.length ?? 0) > 30, 5000, "media from ffmpeg");
    const killedAt = Date.now();
    proc.kill("SIGKILL");
    expect(await withTimeout(s.sinks[0]!.closed, 2000, "onClose")).toBe("disconnect");
    expect(Date.now() - killedAt).toBeLessThan(500);
    await proc.exited;
  });
});
