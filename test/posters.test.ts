/**
 * Issue 16, posters: a COMPLETED video has a thumbnail (a JPEG at most 1280
 * wide, aspect kept) and a storyboard (a sprite of 160 px tiles and a WebVTT
 * whose cues point into it), served under its media token; the fields are
 * null before COMPLETED and reach no other organization. Native backend;
 * posters-wasm.test.ts runs one video on the wasm backend.
 */
import { describe, expect, test } from "bun:test";
import { checkPosters, videoBackend } from "./support/posters.ts";
import { ok } from "./support/api.ts";

const native = videoBackend("native");

describe("posters (native backend)", () => {
  test("a 720p video: null before COMPLETED, then a 1280x720 thumbnail, a 160x90 storyboard and a watch URL", async () => {
    const created = await native.register("av-720p-3s.mp4", "Posters");
    const id = created.asset.public_id;
    expect(created.video.status).toBe("TRANSCODING");
    expect(created.video).toMatchObject({ thumbnail_url: null, storyboard_url: null, watch_url: null });

    const data = await native.completed(id);
    const { cues, mediaDir } = await checkPosters(data, { width: 1280, height: 720, tileHeight: 90, duration: 3 });
    expect(cues).toHaveLength(3);
    const token = mediaDir.split("/").at(-2);
    expect(data.video.watch_url).toBe(`${native.t.base}/watch/${token}`);

    // The list answers the same fields.
    const list = await ok(native.t.api("/videos/"), "listVideos");
    expect(list.data.items.find((v) => v.video.id === id)!.video.thumbnail_url).toBe(data.video.thumbnail_url);

    // The watch page's bookkeeping file sits in the media dir but is never served; other tokens serve nothing.
    expect((await fetch(`${mediaDir}.watch.json`)).status).toBe(404);
    expect((await fetch(data.video.thumbnail_url!.replace(token!, "0".repeat(40)))).status).toBe(404);

    // Another organization cannot read the video (its fields included): the media token is the only capability.
    const other = await native.t.service.orgs.createOrg("other");
    const res = await native.t.api(`/videos/${id}/`, { key: other.apiKey });
    expect(res.status).toBe(404);
    const otherList = await ok(native.t.api("/videos/", { key: other.apiKey }), "listVideos");
    expect(JSON.stringify(otherList)).not.toContain(token!);
  }, 60_000);

  test("an odd-sized source keeps its aspect ratio; an FLV (a recording's format) gets posters; an audio-only source gets a watch URL and no posters", async () => {
    const odd = (await native.register("av-odd-322x242-2s.mp4", "Odd")).asset.public_id;
    const audio = (await native.register("audio-only-2s.m4a", "Audio")).asset.public_id;
    // 322x242 → thumbnail at its own size (under 1280), tiles 160 x even(160*242/322) = 160x120.
    await checkPosters(await native.completed(odd), { width: 322, height: 242, tileHeight: 120, duration: 2 });

    // A live recording's source format (FLV, as media/flv writes it) goes through the same run.
    const flv = (await native.register("live-360p-6s.flv", "Recording-like")).asset.public_id;
    const { cues } = await checkPosters(await native.completed(flv), { width: 640, height: 360, tileHeight: 90, duration: 6 });
    // 6.08 s: six whole seconds and the last 0.08 s.
    expect(cues).toHaveLength(7);

    const a = await native.completed(audio);
    expect(a.video.thumbnail_url).toBeNull();
    expect(a.video.storyboard_url).toBeNull();
    expect(a.video.watch_url).toContain("/watch/");
  }, 60_000);
});
