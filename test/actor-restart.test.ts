import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { streamInput, videoInput } from "../machines/test-contexts.ts";
import { outboxEvents } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(120_000);

let t: TestService | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

test("actor state and outbox rows survive a restart on the same database file, and the actor carries on", async () => {
  t = await startTestService({ listen: false });
  const video = videoInput({ id: "vid_restart000000000001", orgId: t.orgId });
  await t.service.runtime.create("video", video);
  await t.service.runtime.send("video", video.id, { type: "TRANSCODING_STARTED", transcoderId: "native-x" });
  await t.service.runtime.send("video", video.id, { type: "PROGRESS", percent: 42 });
  const stream = streamInput({ id: "ls_restart0000000000001", orgId: t.orgId });
  await t.service.runtime.create("livestream", stream);
  await t.service.runtime.send("livestream", stream.id, { type: "MEDIA_OBSERVED", at: "2026-01-01T00:00:00.000Z" });
  await t.stop({ cleanup: false });

  t = await startTestService({ listen: false, dataDir: t.dataDir, org: { orgId: t.orgId, apiKey: t.apiKey } });
  const v = await t.service.runtime.get("video", video.id, t.orgId);
  expect(v).toMatchObject({ status: "TRANSCODING", value: "processing", context: { progress: 42, transcoderId: "native-x" } });
  const s = await t.service.runtime.get("livestream", stream.id, t.orgId);
  expect(s?.status).toBe("LIVE");
  expect(await t.service.runtime.tagged("livestream", "onAir")).toEqual([{ id: stream.id, orgId: t.orgId }]);

  // A repeated start after the restart is absorbed; completion goes on from the restored state.
  await t.service.runtime.send("video", video.id, { type: "TRANSCODING_STARTED", transcoderId: "native-y" });
  await t.service.runtime.send("video", video.id, { type: "TRANSCODING_COMPLETED", outcome: { url: "u", durationSeconds: 1, sizeBytes: 1, renditions: [], storage: {} } });
  expect((await outboxEvents(t.service, video.id)).map((e) => e.event)).toEqual(["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_PLAYABLE", "VIDEO_TRANSCODING_COMPLETED"]);
  expect((await outboxEvents(t.service, stream.id)).map((e) => e.event)).toEqual(["LIVESTREAM_SCHEDULED", "LIVESTREAM_STARTED"]);
});

test("a transition and its outbox rows commit together or not at all", async () => {
  t = await startTestService({ listen: false });
  const video = videoInput({ id: "vid_atomic0000000000001", orgId: t.orgId });
  await expect(
    t.service.runtime.create("video", video, {
      within: async () => {
        throw new Error("queue refused");
      },
    }),
  ).rejects.toThrow("queue refused");
  expect(await t.service.runtime.get("video", video.id)).toBeNull();
  expect(await outboxEvents(t.service, video.id)).toEqual([]);
});
