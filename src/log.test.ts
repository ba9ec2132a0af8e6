import { describe, expect, test } from "bun:test";
import { createLogger, redact } from "./log.ts";

const STREAM_KEY = "Zk3PqL9xW2bN7vR4tY6uI8oA1sD5fG0h";
const SIG = "0123456789abcdef0123456789abcdef";
const API_KEY = "sk_live_AbCdEfGhIjKl_0123456789abcdefghijABCDEFGHIJ";

function capture(level: "debug" | "info" = "debug") {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, write: (l) => lines.push(l) }) };
}

describe("log redaction", () => {
  test("values of secret field names are redacted at any depth and in any spelling", () => {
    const { lines, logger } = capture();
    logger.debug("x", {
      stream_key: STREAM_KEY,
      nested: { streamKey: STREAM_KEY, deeper: [{ "Stream-Key": STREAM_KEY }] },
      upload_url: `http://h/uploads/upl_1?expires=1&sig=${SIG}`,
      rtmpUrl: `rtmp://h:1935/live/${STREAM_KEY}?sig=${SIG}`,
      password: "hunter2hunter2",
      download_password: "0011223344",
      signing_secret: "whsec_abc",
      authorization: `Bearer ${API_KEY}`,
      token: "tok_123456",
    });
    const line = lines[0]!;
    for (const secret of [STREAM_KEY, SIG, "hunter2hunter2", "0011223344", "whsec_abc", API_KEY, "tok_123456"]) expect(line).not.toContain(secret);
    const entry = JSON.parse(line);
    expect(entry.stream_key).toBe("[redacted]");
    expect(entry.nested.deeper[0]["Stream-Key"]).toBe("[redacted]");
  });

  test("secrets inside strings are redacted wherever they appear: messages, URLs, errors", () => {
    const { lines, logger } = capture();
    const err = new Error(`fetch failed for http://h/uploads/upl_1?expires=1&sig=${SIG} with ${API_KEY}`);
    logger.error(`Publishing to rtmp://h:1935/live/${STREAM_KEY}?sig=${SIG} failed`, {
      err,
      app: `live/${STREAM_KEY}?sig=${SIG}`,
      name: `${STREAM_KEY}?sig=${SIG}`,
      tcUrl: `rtmp://h:1935/live/${STREAM_KEY}?sig=${SIG}`,
      note: "secret is whsec_0123456789abcdef",
      s3: "https://b.s3/x?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA",
    });
    const line = lines[0]!;
    for (const secret of [STREAM_KEY, SIG, "0123456789abcdefghijABCDEFGHIJ", "whsec_0123456789abcdef", "deadbeef", "AKIA"]) expect(line).not.toContain(secret);
    const entry = JSON.parse(line);
    // What is not secret stays readable: the host, the app, the upload id, the API key prefix.
    expect(entry.msg).toBe("Publishing to rtmp://h:1935/live/[redacted] failed");
    expect(entry.app).toBe("live/[redacted]?sig=[redacted]");
    expect(entry.err.message).toContain("http://h/uploads/upl_1?expires=1&sig=[redacted]");
    expect(entry.err.message).toContain("sk_live_AbCdEfGhIjKl_[redacted]");
    expect(entry.err.stack).not.toContain(SIG);
  });

  test("ordinary lines are unchanged; the ids they are tagged with stay", () => {
    const { lines, logger } = capture("info");
    logger.child({ org_id: "org_1" }).info("Video registered", { video_id: "vid_1", kind: "UPLOAD", hls_url: "http://h/live/abc/index.m3u8", count: 3, ok: true, none: null });
    logger.debug("hidden");
    expect(lines).toHaveLength(1);
    const { time, ...rest } = JSON.parse(lines[0]!);
    expect(time).toBeString();
    expect(rest).toEqual({ level: "info", msg: "Video registered", org_id: "org_1", video_id: "vid_1", kind: "UPLOAD", hls_url: "http://h/live/abc/index.m3u8", count: 3, ok: true, none: null });
  });

  test("cycles and deep structures do not break logging", () => {
    const a: Record<string, unknown> = { stream_key: STREAM_KEY };
    a.self = a;
    let deep: Record<string, unknown> = { v: `x?sig=${SIG}` };
    for (let i = 0; i < 50; i++) deep = { d: deep };
    const out = JSON.stringify(redact({ a, deep }));
    expect(out).not.toContain(STREAM_KEY);
    expect(out).not.toContain(SIG);
  });
});
