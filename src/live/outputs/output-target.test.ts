import { describe, expect, test } from "bun:test";
import { parseOutputTarget, scrubTarget } from "./output-target.ts";

const parsed = (url: string, key?: string) => {
  const r = parseOutputTarget(url, key);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe("simulcast target URLs", () => {
  test("RTMP: the key given apart is appended as the stream name; shown as ***", () => {
    expect(parsed("rtmp://a.rtmp.youtube.com/live2", "abcd-efgh-ijkl")).toEqual({
      target: "rtmp://a.rtmp.youtube.com/live2/abcd-efgh-ijkl",
      shown: "rtmp://a.rtmp.youtube.com/live2/***",
      host: "a.rtmp.youtube.com",
      format: "flv",
      secrets: ["abcd-efgh-ijkl"],
    });
  });

  test("RTMP: a key inside the URL (stream name, query) is never shown either", () => {
    const t = parsed("rtmps://live-api-s.facebook.com:443/rtmp/FB-123-0-Ab?s_bl=1&s_sc=2");
    expect(t.target).toBe("rtmps://live-api-s.facebook.com:443/rtmp/FB-123-0-Ab?s_bl=1&s_sc=2");
    expect(t.shown).toBe("rtmps://live-api-s.facebook.com:443/rtmp/***");
    expect(parsed("rtmp://live.twitch.tv/app").shown).toBe("rtmp://live.twitch.tv/app");
  });

  test("SRT: stream_key becomes streamid; every query value is ***", () => {
    const t = parsed("srt://ingest.example.com:9000?latency=200", "publish:KEY1");
    expect(t.target).toBe("srt://ingest.example.com:9000?latency=200&streamid=publish%3AKEY1");
    expect(t.shown).toBe("srt://ingest.example.com:9000?latency=***&streamid=***");
    expect(t.format).toBe("mpegts");
    expect(parsed("srt://[::1]:9000").host).toBe("::1");
  });

  test("refused: other schemes, no application, no port, credentials, spaces, both keys", () => {
    const bad = (url: unknown, key?: unknown) => {
      const r = parseOutputTarget(url, key);
      return r.ok ? null : r.field;
    };
    expect(bad("http://example.com/app")).toBe("url");
    expect(bad("rtmp://example.com")).toBe("url");
    expect(bad("rtmp://example.com/")).toBe("url");
    expect(bad("srt://example.com")).toBe("url");
    expect(bad("srt://example.com:9000/path")).toBe("url");
    expect(bad("rtmp://user:pw@example.com/app")).toBe("url");
    expect(bad("rtmp://example.com/app/a key")).toBe("url");
    expect(bad("srt://example.com:9000?streamid=a", "b")).toBe("url");
    expect(bad("rtmp://example.com/app", "a b")).toBe("stream_key");
    expect(bad(42)).toBe("url");
  });

  test("an error text from the sender loses the key, the target and their encoded forms", () => {
    const t = parsed("srt://h.example:9000", "publish:s3cret/key");
    const text = `Connection to ${t.target} failed (streamid publish:s3cret/key, ${encodeURIComponent("publish:s3cret/key")})`;
    const scrubbed = scrubTarget(text, t);
    expect(scrubbed).not.toContain("s3cret");
    expect(scrubbed).toContain("srt://h.example:9000?streamid=***");
  });
});
