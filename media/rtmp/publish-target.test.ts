import { describe, expect, test } from "bun:test";
import { RtmpUrlError } from "./errors.ts";
import { resolvePublishTarget } from "./publish-target.ts";
import { parseRtmpUrl } from "./rtmp-url.ts";

const view = (t: ReturnType<typeof resolvePublishTarget>) => ({ app: t.app, streamKey: t.streamKey, query: t.query.toString() });

describe("resolvePublishTarget", () => {
  const expected = { app: "live", streamKey: "KEY", query: "sig=X" };

  test('ffmpeg form: app "live", name "KEY?sig=X"', () => {
    expect(view(resolvePublishTarget({ app: "live", name: "KEY?sig=X", tcUrl: "rtmp://h:1935/live" }))).toEqual(expected);
  });

  test('OBS complete URL with a blank key: app "live/KEY?sig=X", name ""', () => {
    expect(view(resolvePublishTarget({ app: "live/KEY?sig=X", name: "", tcUrl: "rtmp://h/live/KEY?sig=X" }))).toEqual(expected);
  });

  test("query only on tcUrl", () => {
    expect(view(resolvePublishTarget({ app: "live", name: "KEY", tcUrl: "rtmp://h:1935/live?sig=X" }))).toEqual(expected);
  });

  test('key and query only on tcUrl (app "live", empty name)', () => {
    expect(view(resolvePublishTarget({ app: "live", name: "", tcUrl: "rtmp://h/live/KEY?sig=X" }))).toEqual(expected);
  });

  test("a query repeated in app and tcUrl is not doubled; the publishing name wins", () => {
    const t = resolvePublishTarget({ app: "live?sig=A&x=1", name: "KEY?sig=B", tcUrl: "rtmp://h/live?sig=C&y=2" });
    expect(t.query.getAll("sig")).toEqual(["B"]);
    expect(t.query.get("x")).toBe("1");
    expect(t.query.get("y")).toBe("2");
  });

  test("slashes are normalised; no key means an empty key", () => {
    expect(view(resolvePublishTarget({ app: "/live/", name: "/KEY", tcUrl: "" }))).toEqual({ ...expected, query: "" });
    expect(resolvePublishTarget({ app: "live", name: "", tcUrl: "rtmp://h/live" }).streamKey).toBe("");
    expect(resolvePublishTarget({ app: "", name: "", tcUrl: "garbage" }).streamKey).toBe("");
  });
});

describe("parseRtmpUrl", () => {
  const url = "rtmp://127.0.0.1:1940/live/KEY?sig=X";

  test("splits like the encoders it imitates", () => {
    expect(parseRtmpUrl(url, "ffmpeg")).toEqual({ hostname: "127.0.0.1", port: 1940, app: "live", name: "KEY?sig=X", tcUrl: "rtmp://127.0.0.1:1940/live" });
    expect(parseRtmpUrl(url, "obs")).toEqual({
      hostname: "127.0.0.1",
      port: 1940,
      app: "live/KEY?sig=X",
      name: "",
      tcUrl: "rtmp://127.0.0.1:1940/live/KEY?sig=X",
    });
    expect(parseRtmpUrl("rtmp://example.com/live/k").port).toBe(1935);
  });

  test("both forms resolve to the same target on the server side", () => {
    const a = parseRtmpUrl(url, "ffmpeg");
    const b = parseRtmpUrl(url, "obs");
    expect(view(resolvePublishTarget(a))).toEqual(view(resolvePublishTarget(b)));
  });

  test("rejects what is not a push URL", () => {
    expect(() => parseRtmpUrl("http://h/live/k")).toThrow(RtmpUrlError);
    expect(() => parseRtmpUrl("rtmp://h/live")).toThrow(RtmpUrlError);
    expect(() => parseRtmpUrl("rtmp://h:99999/live/k")).toThrow(RtmpUrlError);
  });
});
