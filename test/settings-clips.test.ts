import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { waitFor } from "./support/events.ts";
import { settingsScreen } from "./support/settings-browser.ts";

// Starts a service and Chromium: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

const FIXTURE = new URL("../fixtures/av-360p-2s.mp4", import.meta.url).pathname;

if (!hasChromium) console.warn(CHROMIUM_MISSING);

/** Issue 27 item 6: the "Clip" form on a video's page creates the clip (POST /videos/{id}/clips/) and opens it. */
describe.skipIf(!hasChromium)("settings: the Clip form on the video page", () => {
  const files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(FIXTURE)) });
  const screen = settingsScreen({
    env: { MEDIA_BACKEND: "native" },
    prepare: (t) => t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [{ name: "180p", height: 180, videoBitrateKbps: 300, audioBitrateKbps: 64 }] } })),
  });
  let owner: Page;
  let parentId: string;

  beforeAll(async () => {
    owner = await screen.signInAs("owner");
    const r = await screen.t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/av.mp4`, title: "Parent" } });
    parentId = ((await r.json()) as { data: { asset: { public_id: string } } }).data.asset.public_id;
    await waitFor(
      async () => {
        const v = ((await (await screen.t.api(`/videos/${parentId}/`)).json()) as { data: { video: { status: string } } }).data.video;
        if (v.status === "ERROR") throw new Error("the parent failed");
        return v.status === "COMPLETED";
      },
      { timeoutMs: 180_000, intervalMs: 300, what: "the parent to complete" },
    );
  }, 240_000);
  afterAll(() => files.stop(true));

  test("a bad span is refused on the page naming the field; a good one opens the new clip, which links back to its parent", async () => {
    await owner.goto(`${screen.t.base}/settings/videos/${parentId}`);
    const form = owner.locator("form[action$='/clip']");
    await form.getByLabel("Start (seconds)").fill("1");
    await form.getByLabel("End (seconds)").fill("99");
    await form.getByRole("button", { name: "Create clip" }).click();
    await expect(owner.getByRole("alert").first().innerText()).resolves.toMatch(/end_time must be at most the video's length/);

    await owner.goto(`${screen.t.base}/settings/videos/${parentId}`);
    await form.getByLabel("Start (seconds)").fill("0.5");
    await form.getByLabel("End (seconds)").fill("1.5");
    await form.getByLabel("Title").fill("My clip");
    await form.getByRole("button", { name: "Create clip" }).click();
    await owner.waitForURL((u) => /\/settings\/videos\/vid_/.test(u.pathname) && !u.pathname.endsWith(parentId));
    const clipId = new URL(owner.url()).pathname.split("/").at(-1)!;
    await expect(owner.locator("#clip-of a").getAttribute("href")).resolves.toBe(`/settings/videos/${parentId}`);
    const clip = ((await (await screen.t.api(`/videos/${clipId}/`)).json()) as { data: { video: { title: string; source_video_id: string } } }).data.video;
    expect(clip).toMatchObject({ title: "My clip", source_video_id: parentId });
  });
});
