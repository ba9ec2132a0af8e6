import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { STREAM_SECRETS } from "../live/livestream-kind.ts";
import { createSecretCipher } from "../secrets/secret-cipher.ts";
import { VIDEO_SECRETS } from "../videos/video-kind.ts";
import { createContextSealer, type SecretGroup } from "./context-secrets.ts";

const cipher = createSecretCipher(randomBytes(32));

describe("secret fields are declared per kind; the sealing code knows no kind", () => {
  test("a kind declared here (not one of the service's) gets its fields sealed, and opened back exactly", () => {
    const groups: SecretGroup[] = [
      { at: ["auth"], fields: ["token", "refresh"], sealedAs: "sealed" },
      { at: [], fields: ["pin"], sealedAs: "pin_sealed" },
      { at: ["links"], fields: ["items[].password"], sealedAs: "passwords_sealed", leave: "null" },
    ];
    const sealer = createContextSealer(cipher, groups);
    const context = { id: "x_1", auth: { user: "ann", token: "tok-SECRET-1", refresh: "ref-SECRET-2" }, pin: "4242", links: { items: [{ url: "a", password: "pw-SECRET-3" }, { url: "b" }] } };
    const stored = sealer.seal(context, "x_1");
    const text = JSON.stringify(stored);
    for (const secret of ["tok-SECRET-1", "ref-SECRET-2", "4242", "pw-SECRET-3"]) expect(text).not.toContain(secret);
    expect(structuredClone(stored)).toMatchObject({
      id: "x_1",
      auth: { user: "ann", sealed: expect.stringMatching(/^v1\./) },
      pin_sealed: expect.stringMatching(/^v1\./),
      links: {
        items: [
          { url: "a", password: null },
          { url: "b", password: null },
        ],
      },
    });
    expect(sealer.hasPlaintext(stored)).toBe(false);
    expect(sealer.hasPlaintext(context)).toBe(true);
    expect(sealer.open(stored, "x_1")).toEqual({
      ...context,
      links: {
        items: [
          { url: "a", password: "pw-SECRET-3" },
          { url: "b", password: null },
        ],
      },
    });
    // The actor id is the associated data: a sealed value copied to another actor does not open.
    expect(() => sealer.open(stored, "x_2")).toThrow(/Cannot open the sealed secrets of x_2/);
    // Nothing declared present (a context without secrets yet): stored as it is.
    expect(sealer.seal({ id: "x_1", auth: null, links: { items: [] } }, "x_1")).toEqual({ id: "x_1", auth: null, links: { items: [] } });
  });

  test("the stored forms of streams and videos are those earlier versions wrote (their rows still open)", () => {
    const stream = createContextSealer(cipher, STREAM_SECRETS);
    const ctx = { id: "ls_1", title: "t", streamKey: "KEY123", rtmpUrl: "rtmp://h/live/KEY123?sig=1" };
    const stored = stream.seal(ctx, "ls_1") as Record<string, unknown>;
    expect(Object.keys(stored)).toEqual(["id", "title", "sealed"]);
    expect(JSON.parse(cipher.open(stored.sealed as string, "ls_1"))).toEqual({ streamKey: "KEY123", rtmpUrl: "rtmp://h/live/KEY123?sig=1" });
    expect(stream.open(stored, "ls_1")).toEqual(ctx);

    const video = createContextSealer(cipher, VIDEO_SECRETS);
    const v = {
      id: "vid_1",
      stream: { id: "ls_1", stream_key: "KEY123" },
      outcome: {
        url: "u",
        renditions: [
          { name: "360p", download_password: "pw1" },
          { name: "720p", download_password: null },
        ],
      },
    };
    const sv = video.seal(v, "vid_1") as any;
    expect(sv.stream).toEqual({ id: "ls_1", stream_key_sealed: expect.stringMatching(/^v1\./) });
    expect(cipher.open(sv.stream.stream_key_sealed, "vid_1")).toBe("KEY123");
    expect(sv.outcome.renditions).toEqual([
      { name: "360p", download_password: null },
      { name: "720p", download_password: null },
    ]);
    expect(JSON.parse(cipher.open(sv.outcome.download_passwords_sealed, "vid_1"))).toEqual(["pw1", null]);
    expect(video.open(sv, "vid_1")).toEqual(v);
    // A video without a stream or an outcome (an upload still transcoding).
    expect(video.seal({ id: "vid_2", stream: null, outcome: null }, "vid_2")).toEqual({ id: "vid_2", stream: null, outcome: null });
  });
});
