import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { outboxEvents } from "./support/events.ts";
import { FIXTURES } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { failed, ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 24 item 6: `POST /videos/{id}/retry/`. A customer whose video failed
 * (an outage, a source that was briefly missing) tries the same video again:
 * same id, same source, a new attempt, the transcoding events again. Before,
 * re-registering the same `source_url` only answered the ERROR video back.
 */

/** An origin whose file can be missing for a while (404), then present. */
let present = false;
const origin = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: () => (present ? new Response(Bun.file(join(FIXTURES, "av-odd-322x242-2s.mp4"))) : new Response("not found", { status: 404 })),
});
const sourceUrl = (name: string) => `http://127.0.0.1:${origin.port}/${name}.mp4`;

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { TRANSCODE_WORKERS: "1" } });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  origin.stop(true);
});

async function settledVideo(id: string, ms = 90_000): Promise<any> {
  const end = Date.now() + ms;
  for (;;) {
    const body = await ok(t.api(`/videos/${id}/`), "getVideo");
    if (body.data.video.status !== "TRANSCODING" || Date.now() > end) return body.data;
    await Bun.sleep(100);
  }
}

const retry = (id: string, key?: string) => t.api(`/videos/${id}/retry/`, { method: "POST", ...(key ? { key } : {}) });

describe("POST /videos/{id}/retry/", () => {
  test("a video in ERROR is tried again: same id and source, TRANSCODING, then COMPLETED; the transcoding events fire again, VIDEO_UPLOADED does not", async () => {
    present = false;
    const created = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl("later") } });
    expect(created.status).toBe(201);
    const id = (await ok(created, "createVideo")).data.asset.public_id as string;
    const failed = await settledVideo(id);
    expect(failed.video.status).toBe("ERROR");
    expect(failed.error.code).toBe("SOURCE_NOT_FOUND");

    // Re-registering the URL answers the failed video (the spec's idempotency): that is why retry exists.
    const again = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl("later") } });
    expect(again.status).toBe(200);
    expect((await ok(again, "createVideo")).data.video).toMatchObject({ id, status: "ERROR" });

    present = true;
    const res = await retry(id);
    expect(res.status).toBe(200);
    const body = await ok(res, "retryVideo");
    expect(body.success).toBe(true);
    expect(body.data.video).toMatchObject({ id, status: "TRANSCODING", source_url: sourceUrl("later") });
    expect(body.data.error).toBeNull();

    const done = await settledVideo(id);
    expect(done.video.status).toBe("COMPLETED");
    expect(done.error).toBeNull();
    expect(done.renditions.length).toBeGreaterThan(0);
    const events = (await outboxEvents(t.service, id)).map((e) => e.event);
    expect(events).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_FAILED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
  }, 120_000);

  test("a video not in ERROR is 409 VIDEO_NOT_RETRYABLE and nothing is queued; a missing or another organization's id is 404", async () => {
    present = true;
    const created = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl("fine") } });
    const id = (await ok(created, "createVideo")).data.asset.public_id as string;
    // While it transcodes (or if it already completed): refused, with its status.
    const early = await retry(id);
    expect(early.status).toBe(409);
    const earlyBody = await failed<{ status: string }>(early);
    expect(earlyBody).toMatchObject({ success: false, error: { code: "VIDEO_NOT_RETRYABLE" } });
    expect(["TRANSCODING", "COMPLETED"]).toContain(earlyBody.error.details.status);
    expect((await settledVideo(id)).video.status).toBe("COMPLETED");
    const late = await retry(id);
    expect(late.status).toBe(409);
    expect((await failed(late)).error).toMatchObject({ code: "VIDEO_NOT_RETRYABLE", details: { status: "COMPLETED" } });
    expect((await outboxEvents(t.service, id)).map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);

    const missing = await retry("vid_doesnotexist00000000");
    expect(missing.status).toBe(404);
    const missingBody = await missing.text();

    // Another organization's failed video: the same 404 as a missing id.
    present = false;
    const other = await t.service.orgs.createOrg("other");
    const foreign = await ok(t.api("/videos/", { method: "POST", json: { source_url: sourceUrl("theirs") }, key: other.apiKey }), "createVideo");
    const foreignId = foreign.data.asset.public_id as string;
    const end = Date.now() + 60_000;
    while (((await ok(t.api(`/videos/${foreignId}/`, { key: other.apiKey }), "getVideo")).data.video.status as string) === "TRANSCODING" && Date.now() < end) await Bun.sleep(100);
    const stranger = await retry(foreignId);
    expect(stranger.status).toBe(404);
    const noTime = (text: string) => text.replace(/"timestamp":"[^"]+"/, "");
    expect(noTime(await stranger.text())).toBe(noTime(missingBody));
    expect((await retry(foreignId, other.apiKey)).status).toBe(200);
  }, 120_000);

  test("two retries racing: one queues the attempt, the other is 409", async () => {
    present = false;
    const created = await t.api("/videos/", { method: "POST", json: { source_url: sourceUrl("race") } });
    const id = (await ok(created, "createVideo")).data.asset.public_id as string;
    expect((await settledVideo(id)).video.status).toBe("ERROR");
    const answers = await Promise.all([retry(id), retry(id)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    // Still missing: the new attempt fails again, once.
    expect((await settledVideo(id)).error.code).toBe("SOURCE_NOT_FOUND");
    expect((await outboxEvents(t.service, id)).map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_FAILED", "VIDEO_TRANSCODING_FAILED"]);
  }, 120_000);
});
