import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { publish } from "../media/rtmp/rtmp-publisher.ts";
import { fixtureTags } from "../media/rtmp/test-support.ts";
import { EVENT_NAMES, type EventName } from "../src/webhooks/event-names.ts";
import { outboxEvents, waitFor } from "./support/events.ts";
import { startFileServer } from "./support/file-server.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { freeTcpPort } from "./support/free-port.ts";
import { WEBHOOK_ENV } from "./support/webhook-fixture.ts";
import { startWebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/**
 * Test events (POST /webhooks/{id}/test/) against real ones: every event of
 * the reference is produced for real by the service (a transcoded upload, a
 * source that answers 404, a booked stream, an RTMP broadcast ended by the
 * pipeline), and the sample sent for it must have exactly the same keys, at
 * every depth. `tags` is the caller's own object, so only its presence counts.
 */
let t: TestService;
const files = startFileServer();
const rx = startWebhookReceiver();
beforeAll(async () => {
  t = await startTestService({ env: { ...WEBHOOK_ENV, LIVE_RECONNECT_MS: "400" } });
});
afterAll(async () => {
  await t.stop();
  files.stop();
  rx.stop();
});

/** Keys at every depth; scalars and null are leaves; an array is the set of its elements' shapes. */
function shape(value: unknown, key?: string): unknown {
  if (key === "tags") return "tags";
  if (Array.isArray(value)) return [...new Set(value.map((v) => JSON.stringify(shape(v))))].sort().map((s) => JSON.parse(s));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, shape((value as Record<string, unknown>)[k], k)]),
    );
  }
  return "leaf";
}

async function videoDone(id: string) {
  return waitFor(
    async () => {
      const b = await ok(t.api(`/videos/${id}/`), "getVideo");
      return ["COMPLETED", "ERROR"].includes(b.data?.video?.status) ? b.data : undefined;
    },
    { timeoutMs: 120_000, what: `video ${id} done` },
  );
}

/** The real `data` of each event, from the outbox of entities the service ran for real. */
async function realEvents(): Promise<Map<string, any>> {
  const real = new Map<string, any>();
  const keep = (events: Array<{ event: string; data: any }>) => {
    for (const e of events) if (!real.has(e.event)) real.set(e.event, e.data);
  };

  const uploaded = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("av-360p-2s.mp4"), title: "Real" } }), "createVideo");
  const missing = await ok(t.api("/videos/", { method: "POST", json: { source_url: files.url("no-such-file.mp4"), title: "Missing" } }), "createVideo");
  const booked = await t.api("/livestreams/schedule/", { method: "POST", json: { title: "Booked", scheduled_at: new Date(Date.now() + 86_400_000).toISOString() } });
  expect(booked.status).toBe(201);
  keep(await outboxEvents(t.service, (await ok(booked, "scheduleLivestream")).data.stream.id));

  // Two simulcast targets (issue 26): ffmpeg as a platform (LIVESTREAM_OUTPUT_ACTIVE) and a closed port (LIVESTREAM_OUTPUT_FAILED).
  const [up, down] = [await freeTcpPort(), await freeTcpPort()];
  const platform = Bun.spawn(["ffmpeg", "-v", "error", "-listen", "1", "-i", `rtmp://127.0.0.1:${up}/app/k`, "-c", "copy", "-f", "null", "-"], { stdout: "ignore", stderr: "ignore" });
  const outputs = [{ url: `rtmp://127.0.0.1:${up}/app`, stream_key: "k" }, { url: `rtmp://127.0.0.1:${down}/app/k` }];
  const live = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "On air", tags: { team: "a" }, outputs } }), "createLivestream")).data.stream;
  const pub = publish({ url: live.rtmp_url, form: "ffmpeg", tags: await fixtureTags(), pace: "realtime" });
  await pub.started;
  await pub.finished; // the encoder stops; after the reconnect window the pipeline ends the stream
  const all = ["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED", "LIVESTREAM_ENDED", "LIVESTREAM_RECORDING_READY", "LIVESTREAM_OUTPUT_ACTIVE", "LIVESTREAM_OUTPUT_FAILED"];
  await waitFor(async () => new Set((await outboxEvents(t.service, live.id)).map((e) => e.event)).size >= all.length, { timeoutMs: 120_000, what: "the broadcast's six events" });
  platform.kill(9);
  keep(await outboxEvents(t.service, live.id));

  expect((await videoDone(uploaded.data.asset.public_id)).video.status).toBe("COMPLETED");
  keep(await outboxEvents(t.service, uploaded.data.asset.public_id));
  expect((await videoDone(missing.data.asset.public_id)).video.status).toBe("ERROR");
  keep(await outboxEvents(t.service, missing.data.asset.public_id));
  return real;
}

test("every test event has exactly the keys of the real event of that name, and a failure the pipeline really sends", async () => {
  const real = await realEvents();
  expect([...real.keys()].sort()).toEqual([...EVENT_NAMES].sort());

  const reg = await ok(t.api("/webhooks/", { method: "POST", json: { url: rx.url, events: ["VIDEO_UPLOADED"] } }), "createWebhook");
  const samples = new Map<EventName, any>();
  for (const event of EVENT_NAMES) {
    const res = await t.api(`/webhooks/${reg.data.endpoint.id}/test/`, { method: "POST", json: { event } });
    expect([event, res.status]).toEqual([event, 201]);
  }
  await rx.waitFor(EVENT_NAMES.length);
  for (const r of rx.received) {
    const body = JSON.parse(r.body);
    samples.set(body.event, body.data);
  }

  for (const event of EVENT_NAMES) {
    expect([event, shape(samples.get(event))]).toEqual([event, shape(real.get(event))]);
    // Statuses as the real events carry them.
    const s = samples.get(event);
    const r = real.get(event);
    if (event.startsWith("VIDEO_")) expect([event, s.video.status]).toEqual([event, r.video.status]);
    else if (event.startsWith("LIVESTREAM_OUTPUT_")) expect([event, s.output.status]).toEqual([event, r.output.status]);
    else expect([event, s.stream.status]).toEqual([event, r.stream.status]);
  }
  // The failure sample is what the pipeline really sends for a source that answers 404: same code, same message.
  expect(samples.get("VIDEO_TRANSCODING_FAILED").error).toEqual(real.get("VIDEO_TRANSCODING_FAILED").error);
}, 300_000);
