/**
 * Issue 29 item 1, early playback, through the running service (native backend, STORAGE=local): hls.js in
 * Chromium starts a video while it is still TRANSCODING (GET says `playable: true` with the master's `url`),
 * plays it to the end at 1x without a stall, and every frame it shows is the source's frame for that instant
 * (a frame-counter patch); VIDEO_PLAYABLE reaches a real webhook receiver once, before COMPLETED in the
 * outbox; growing playlists are served `no-cache`, the final ones are VOD.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, startPlayer } from "./support/browser.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { TEST_CA_FILE, startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";
import { earlySource, freezeEncoder, registerUntilPlayable, playOnPage, type EarlyPlay } from "./support/early-playback.ts";
import { fillSignIn } from "./support/settings-browser.ts";
import { peopleFor } from "../src/settings/session-guard.ts";
import type { Page } from "playwright-core";

setDefaultTimeout(180_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const SECONDS = 24;
const FPS = 25;

describe.skipIf(!hasChromium || !hasNativeFfmpeg())("early playback (native, local storage)", () => {
  let t: TestService;
  let player: PlayerHarness;
  let rx: WebhookReceiver;
  let files: ReturnType<typeof Bun.serve>;
  let owner: Page;
  const dir = mkdtempSync(join(tmpdir(), "early-"));

  beforeAll(async () => {
    const source = join(dir, "counter.mp4");
    [player] = await Promise.all([startPlayer(), earlySource(source, { seconds: SECONDS, fps: FPS, size: "854x480" })]);
    files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(source)) });
    rx = startWebhookReceiver();
    t = await startTestService({ env: { MEDIA_BACKEND: "native", WEBHOOK_CA_FILE: TEST_CA_FILE } });
    // Two rungs of a noisy 480p source; the 1.5x rule decides the playable moment whatever the machine's speed.
    const rung = (height: number, videoBitrateKbps: number) => ({ name: `${height}p`, height, videoBitrateKbps, audioBitrateKbps: 64 });
    await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [rung(360, 800), rung(480, 1500)] } }));
    await ok(t.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"] } }), "createWebhook");
    // The owner, signed in to the settings screen before the video exists (a sign-in is slow on a loaded machine).
    const people = peopleFor(t.service.database);
    const { token } = await people.createOwner(t.orgId, "owner@example.com");
    await people.completeSetup(token!, "early-playback-pw");
    owner = await player.newPage();
    await fillSignIn(owner, t.base, "owner@example.com", "early-playback-pw");
  });

  afterAll(async () => {
    await player?.close();
    await t?.stop();
    rx?.stop();
    files?.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test("hls.js starts while TRANSCODING, plays to the end without a stall, each frame the source's; VIDEO_PLAYABLE once before COMPLETED", async () => {
    const { id, early, get } = await registerUntilPlayable(t, t, `http://127.0.0.1:${files.port}/counter.mp4`, "Early");
    // Held still until the player shows its first frame (freezeEncoder says why).
    const frozen = freezeEncoder();
    expect(frozen.pids.length).toBeGreaterThan(0);
    expect(early.status).toBe("TRANSCODING");
    expect(early.url).toEndWith("/hls/master.m3u8");

    // A growing media playlist is an EVENT playlist, served no-cache.
    const growing = await fetch(early.url!.replace("master.m3u8", "360p/index.m3u8"));
    const growingText = await growing.text();
    expect(growingText).toContain("#EXT-X-PLAYLIST-TYPE:EVENT");
    expect(growingText).not.toContain("#EXT-X-ENDLIST");
    expect(growing.headers.get("cache-control")).toBe("no-cache");

    // The settings screen's video page says it plays while transcoding, and shows the player (checked beside playback).
    const settingsPage = (async () => {
      await owner.goto(`${t.base}/settings/videos/${id}`);
      return { text: await owner.locator("#video-playable").textContent(), player: await owner.locator("#player").getAttribute("data-src") };
    })();
    const statusAtStart: string[] = [];
    let played: EarlyPlay;
    try {
      played = await playOnPage(player, early.url!, {
        timeoutMs: 120_000,
        onPlaying: async () => {
          statusAtStart.push((await get()).data.video.status);
          frozen.resume();
        },
      });
    } finally {
      frozen.resume();
    }
    // Playback began before the transcode completed.
    expect(statusAtStart[0]).toBe("TRANSCODING");
    expect(await settingsPage).toEqual({ text: expect.stringContaining("Playable while transcoding"), player: early.url! });
    expect(played.error).toBeNull();
    expect(played.ended).toBe(true);
    expect(played.stalls).toEqual([]);
    expect(played.currentTime).toBeGreaterThan(SECONDS - 0.5);
    // Every frame shown is the source's frame for its instant (one constant offset), from the start to the end.
    // requestVideoFrameCallback skips frames on a loaded machine: a quarter of them is plenty.
    expect(played.frameCount).toBeGreaterThan(SECONDS * FPS * 0.25);
    expect(played.mismatched).toEqual([]);
    expect(played.firstMediaTime).toBeLessThan(0.5);
    expect(played.lastMediaTime).toBeGreaterThan(SECONDS - 0.5);

    const done = await waitFor(
      async () => {
        const v = (await get()).data.video;
        return v.status === "COMPLETED" ? v : undefined;
      },
      { timeoutMs: 60_000, what: "COMPLETED" },
    );
    expect(done.url).toBe(early.url);
    expect(done.playable).toBe(true);
    const final = await fetch(early.url!.replace("master.m3u8", "360p/index.m3u8"));
    const finalText = await final.text();
    expect(finalText).toContain("#EXT-X-PLAYLIST-TYPE:VOD");
    expect(finalText).toContain("#EXT-X-ENDLIST");
    expect(final.headers.get("cache-control")).toBe("public, max-age=60");

    // The outbox: VIDEO_PLAYABLE exactly once, before COMPLETED; the receiver got it once, with the master's URL.
    const events = (await outboxEvents(t.service, id)).map((e) => e.event);
    expect(events.filter((e) => e === "VIDEO_PLAYABLE")).toHaveLength(1);
    expect(events.indexOf("VIDEO_PLAYABLE")).toBeLessThan(events.indexOf("VIDEO_TRANSCODING_COMPLETED"));
    await rx.waitFor(2, 60_000);
    const bodies = rx.received.map((r) => JSON.parse(r.body) as { event: string; data: { video: { id: string; status: string; url: string | null } } });
    const playable = bodies.filter((b) => b.event === "VIDEO_PLAYABLE" && b.data.video.id === id);
    expect(playable).toHaveLength(1);
    expect(playable[0]!.data.video).toMatchObject({ status: "TRANSCODING", url: early.url });
  });
});
