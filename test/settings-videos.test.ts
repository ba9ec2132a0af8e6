import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { playerPlays, settingsScreen } from "./support/settings-browser.ts";
import { ok } from "./support/api.ts";

// Starts a service and Chromium: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const FIXTURE = new URL("../fixtures/av-360p-2s.mp4", import.meta.url).pathname;

describe.skipIf(!hasChromium)("settings screen: videos (issue 13 point 5)", () => {
  const screen = settingsScreen();

  test("upload a file from the page, watch its progress reach COMPLETED, play it, delete it", async () => {
    const page = await screen.signInAs("developer");
    await page.getByRole("link", { name: "Videos", exact: true }).click();
    expect(await page.getByText("No videos yet").isVisible()).toBe(true);

    // The API's validation on the URL form: its message on the page.
    await page.getByLabel("Source URL").fill("ftp://example.com/a.mp4");
    await page.getByRole("button", { name: "Add video" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("must be an http or https URL");

    await page.getByLabel("Video file").setInputFiles(FIXTURE);
    await page.getByLabel("Title (optional)").first().fill("Fixture clip");
    await page.getByRole("button", { name: "Upload" }).click();
    await page.waitForURL((u) => u.searchParams.get("done") === "uploaded");
    const row = page.locator("tr[data-video-id]");
    expect(await row.count()).toBe(1);
    expect(await row.getByRole("link").innerText()).toBe("Fixture clip");
    const seenAt = await row.getAttribute("data-status");
    // The list updates itself (no reload): a marker set now survives until COMPLETED.
    await page.evaluate("window.sameDocument = true");
    await page.waitForFunction('document.querySelector("tr[data-video-id]").getAttribute("data-status") !== "TRANSCODING"', null, { timeout: 60_000 });
    expect(await row.locator(".status .badge").innerText()).toBe("COMPLETED");
    if (seenAt === "TRANSCODING") expect(await page.evaluate("window.sameDocument")).toBe(true);

    const id = (await row.getAttribute("data-video-id"))!;
    const api = await ok(screen.t.api(`/videos/${id}/`), "getVideo");
    expect(api.data.video).toMatchObject({ status: "COMPLETED", title: "Fixture clip", kind: "UPLOAD" });
    // Issue 27: the row's thumbnail is the image URL of the video, and it loads (a decoded picture).
    await page.reload();
    expect(await row.locator("img.thumb").getAttribute("src")).toBe(`/image/${id}/thumbnail.jpg?width=160`);
    await page.waitForFunction('(() => { const i = document.querySelector("tr[data-video-id] img.thumb"); return i && i.complete && i.naturalWidth === 160; })()', null, { timeout: 60_000 });

    await row.getByRole("link", { name: "Fixture clip" }).click();
    await playerPlays(page);
    expect(await page.evaluate('document.getElementById("player").videoWidth')).toBeGreaterThan(0);
    expect(await page.getByRole("heading", { name: "Renditions and downloads" }).isVisible()).toBe(true);

    page.once("dialog", (d) => d.accept());
    await page.getByRole("button", { name: "Delete video" }).click();
    await page.waitForURL((u) => u.searchParams.get("done") === "deleted");
    expect(await page.getByText("No videos yet").isVisible()).toBe(true);
    expect((await screen.t.api(`/videos/${id}/`)).status).toBe(404);
    await page.context().close();
  }, 90_000);

  test("a viewer sees the list without upload or delete; another organization's video is a 404 page", async () => {
    const other = await screen.t.service.orgs.createOrg("other");
    const upload = await ok(screen.t.api("/videos/upload-url/", { method: "POST", json: {}, key: other.apiKey }), "createUploadUrl");
    await fetch(upload.data.upload_url, { method: "PUT", body: Bun.file(FIXTURE) });
    const foreign = await ok(screen.t.api("/videos/", { method: "POST", json: { source_url: upload.data.source_url }, key: other.apiKey }), "createVideo");

    const viewer = await screen.signInAs("viewer");
    await viewer.goto(`${screen.t.base}/settings/videos`);
    expect(await viewer.getByLabel("Video file").count()).toBe(0);
    const res = await viewer.goto(`${screen.t.base}/settings/videos/${foreign.data.video.id}`);
    expect(res!.status()).toBe(404);
    const missing = await viewer.goto(`${screen.t.base}/settings/videos/vid_missing`);
    expect(missing!.status()).toBe(404);
    await viewer.context().close();
  }, 120_000);

  test("issue 24: a failed video's page has Retry; it queues the video again (CSRF-checked), a viewer has no Retry", async () => {
    // A source answering 404 until it is fixed (the same URL, as a customer would fix it).
    let fixed = false;
    const origin = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => (fixed ? new Response(Bun.file(FIXTURE)) : new Response("gone", { status: 404 })) });
    try {
      const created = await ok(screen.t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${origin.port}/clip.mp4`, title: "Flaky source" } }), "createVideo");
      const id = created.data.asset.public_id as string;
      const end = Date.now() + 60_000;
      while (((await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data.video.status as string) !== "ERROR" && Date.now() < end) await Bun.sleep(100);

      const viewer = await screen.signInAs("viewer");
      await viewer.goto(`${screen.t.base}/settings/videos/${id}`);
      expect(await viewer.getByRole("button", { name: "Retry" }).count()).toBe(0);
      await viewer.context().close();

      const page = await screen.signInAs("developer");
      await page.goto(`${screen.t.base}/settings/videos/${id}`);
      expect(await page.getByRole("alert").first().innerText()).toContain("SOURCE_NOT_FOUND");
      // A POST without the form's token (a forged form) is refused and queues nothing.
      const forged = await page.evaluate(
        async (url) => (await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "_csrf=guessed" })).status,
        `${screen.t.base}/settings/videos/${id}/retry`,
      );
      expect(forged).toBe(403);
      expect((await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data.video.status).toBe("ERROR");

      fixed = true;
      await page.getByRole("button", { name: "Retry" }).click();
      await page.waitForURL((u) => u.searchParams.get("done") === "retried");
      expect(await page.getByText("Video queued again").isVisible()).toBe(true);
      expect(await page.getByRole("button", { name: "Retry" }).count()).toBe(0);
      const done = Date.now() + 90_000;
      let status = "TRANSCODING";
      while (status === "TRANSCODING" && Date.now() < done) {
        await Bun.sleep(200);
        status = (await ok(screen.t.api(`/videos/${id}/`), "getVideo")).data.video.status;
      }
      expect(status).toBe("COMPLETED");
      await page.context().close();
    } finally {
      origin.stop(true);
    }
  }, 150_000);
});
