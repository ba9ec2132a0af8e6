/**
 * Issue 28, the settings screen's analytics pages in Chromium: the
 * organization's overview, a video's and a live stream's figures, with uPlot
 * charts served from node_modules (nothing requested from another origin).
 */
import { ok } from "./support/api.ts";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { waitFor } from "./support/events.ts";
import { settingsScreen } from "./support/settings-browser.ts";

setDefaultTimeout(120_000);

describe("settings: analytics", () => {
  const ids = { video: "", stream: "" };
  const screen = settingsScreen({
    env: { TRUST_PROXY: "1", ANALYTICS_CLOSE_INTERVAL_MS: "200" },
    prepare: async (t) => {
      // Raw POSTs of two routes (createVideo, createLivestream): the reason this helper reads untyped JSON.
      const post = async (path: string, json: unknown) => ((await (await t.api(path, { method: "POST", json })).json()) as any).data;
      ids.video = (await post("/videos/", { source_url: "http://127.0.0.1:9/none.mp4" })).asset.public_id;
      ids.stream = (await post("/livestreams/", { title: "settings analytics" })).stream.id;
      const now = Date.now();
      const events = (asset: Record<string, string>, view: string, end: boolean) => [
        { ...asset, view_id: view, viewer_id: view, type: "viewstart", t: now, player_time: 0 },
        { ...asset, view_id: view, viewer_id: view, type: "playing", t: now + 400, player_time: 0, startup_ms: 400 },
        ...(end ? [{ ...asset, view_id: view, viewer_id: view, type: "viewend", t: now + 5400, player_time: 5 }] : []),
      ];
      const send = (body: unknown, from: string) =>
        fetch(`${t.base}/beacons/`, { method: "POST", body: JSON.stringify(body), headers: { "x-forwarded-for": from, "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0" } });
      await send(events({ video_id: ids.video }, "sv1", true), "81.2.69.160");
      await send(events({ stream_id: ids.stream }, "sl1", false), "8.8.8.8");
      await waitFor(async () => (await ok(t.api(`/videos/${ids.video}/analytics/`), "getVideoAnalytics")).data.views === 1, { what: "the view closed" });
    },
  });

  test("overview, a video's and a stream's pages show the figures and draw uPlot charts from this origin", async () => {
    const page = await screen.signInAs("owner");
    const outside: string[] = [];
    page.on("request", (r) => !r.url().startsWith(screen.t.base) && !r.url().startsWith("data:") && outside.push(r.url()));
    await page.getByRole("navigation").getByRole("link", { name: "Analytics", exact: true }).click();
    await page.waitForURL((u) => u.pathname === "/settings/analytics");
    await page.locator(".uplot canvas").first().waitFor({ timeout: 30_000 });
    expect(await page.locator("table.figures").innerText()).toContain("Views\t1");
    await page.getByRole("link", { name: ids.video }).click();
    await page.waitForURL((u) => u.pathname === `/settings/analytics/videos/${ids.video}`);
    await page.locator(".uplot canvas").first().waitFor({ timeout: 30_000 });
    const text = await page.locator("main").innerText();
    expect(text).toContain("400 ms / 400 ms");
    expect(text).toContain("GB");
    expect(text).toContain("Firefox");
    // The stream's viewer is still watching: a heartbeat now keeps it within the "now" window (30 s), however long the steps above took on a busy machine.
    const heartbeat = [{ stream_id: ids.stream, view_id: "sl1", viewer_id: "sl1", type: "heartbeat", t: Date.now(), player_time: 1 }];
    expect((await fetch(`${screen.t.base}/beacons/`, { method: "POST", body: JSON.stringify(heartbeat), headers: { "x-forwarded-for": "8.8.8.8" } })).status).toBe(204);
    await page.goto(`${screen.t.base}/settings/analytics/livestreams/${ids.stream}`);
    expect(await page.locator("table.figures").innerText()).toContain("Concurrent viewers now / peak\t1 / 1");
    expect(await page.locator("figcaption", { hasText: "Concurrent viewers" }).count()).toBe(1);
    // Another organization's id (or an unknown one) is a 404 page.
    const missing = await page.goto(`${screen.t.base}/settings/analytics/videos/vid_nope`);
    expect(missing?.status()).toBe(404);
    expect(outside).toEqual([]);
  });
});
