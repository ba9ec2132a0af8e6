/**
 * `npm run screenshots`: a PNG of every settings page (issue 13) in
 * docs/screenshots/, at laptop width (1280 px, whole page) and a few at phone
 * width (390 px). It starts its own service in a temporary DATA_DIR (real
 * database, real ffmpeg), makes an owner and sample data through the same
 * modules the screen and the API use (a transcoded video, a webhook endpoint
 * with a delivery to a local HTTPS receiver, a ready and a booked live
 * stream, a second member), signs in with Debian's Chromium and saves each
 * page. Needs /usr/bin/chromium (`npm run setup:browser`) and ffmpeg.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { peopleFor } from "../src/settings/session-guard.ts";

const ROOT = join(import.meta.dir, "..");
const OUT = join(ROOT, "docs", "screenshots");
const CHROMIUM = "/usr/bin/chromium";
const FIXTURE = join(ROOT, "fixtures", "av-720p-3s.mp4");
const TLS = join(ROOT, "fixtures", "tls");
const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const OWNER = { email: "owner@example.com", password: "screenshots-owner-password" };

if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} not found: run \`npm run setup:browser\` first.`);
  process.exit(1);
}

const dataDir = mkdtempSync(join(tmpdir(), "screenshots-"));
// A webhook receiver on loopback with the test CA's certificate, so the delivery log shows a real 200.
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  tls: { cert: Bun.file(join(TLS, "server.pem")), key: Bun.file(join(TLS, "server.key")) },
  fetch: () => new Response("ok"),
});
const config = loadConfig({
  DATA_DIR: dataDir,
  PORT: "0",
  HOST: "127.0.0.1",
  RTMP_PORT: "0",
  ALLOW_PRIVATE_NETWORK: "1",
  LOG_LEVEL: "silent",
  WEBHOOK_CA_FILE: join(TLS, "ca.pem"),
});
const service = await createService(config, { logger: silentLogger });
const { port } = await service.listen();
const base = `http://127.0.0.1:${port}`;

async function api(key: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}/api/public/v1${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json.error)}`);
  return json.data;
}

async function shoot(page: Page, name: string, path: string, ready?: (page: Page) => Promise<void>) {
  await page.goto(`${base}${path}`);
  if (ready) await ready(page);
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  console.log(`docs/screenshots/${name}.png`);
}

/** The player shows a picture: hls.js attached and past the first second. */
const playing = (id: string) => async (page: Page) => {
  await page.waitForFunction(
    `(() => { const v = document.getElementById(${JSON.stringify(id)}); if (v && v.paused && v.readyState >= 2) v.play().catch(() => {}); return !!v && v.currentTime > 1 && v.videoWidth > 0; })()`,
    null,
    { timeout: 30_000, polling: 200 },
  );
  await page.evaluate(`document.getElementById(${JSON.stringify(id)}).pause()`);
};

try {
  mkdirSync(OUT, { recursive: true });
  const { org, apiKey } = await service.orgs.createOrg("Acme Video");
  const people = peopleFor(service.database);
  const { token } = await people.createOwner(org.id, OWNER.email);
  if (token) await people.completeSetup(token, OWNER.password);
  // The developer's link stays unused: its setup page is a screenshot.
  const devLink = (await people.invite(org.id, "dev@example.com", "developer")).token;
  // A viewer with a password, for the 403 page.
  const viewer = { email: "viewer@example.com", password: "screenshots-viewer-password" };
  const viewerLink = (await people.invite(org.id, viewer.email, "viewer")).token;
  if (viewerLink) await people.completeSetup(viewerLink, viewer.password);

  // A video, transcoded.
  const slot = await api(apiKey, "/videos/upload-url/", {});
  await fetch(slot.upload_url, { method: "PUT", body: Bun.file(FIXTURE) });
  const video = (await api(apiKey, "/videos/", { source_url: slot.source_url, title: "Product launch teaser" })).video;
  for (let i = 0; i < 600; i++) {
    const v = (await api(apiKey, `/videos/${video.id}/`)).video;
    if (v.status !== "TRANSCODING") break;
    await Bun.sleep(250);
  }

  // A webhook endpoint with one test delivery.
  const endpoint = (
    await api(apiKey, "/webhooks/", {
      url: `https://127.0.0.1:${receiver.port}/hooks/video`,
      events: ["VIDEO_TRANSCODING_COMPLETED", "VIDEO_TRANSCODING_FAILED", "LIVESTREAM_RECORDING_READY"],
      description: "Production backend",
    })
  ).endpoint;
  await api(apiKey, `/webhooks/${endpoint.id}/test/`, { event: "VIDEO_TRANSCODING_COMPLETED" });

  // Live streams: one ready now, one booked for next week.
  const stream = (await api(apiKey, "/livestreams/", { title: "Weekly town hall" })).stream;
  await api(apiKey, "/livestreams/schedule/", { title: "Launch event", scheduled_at: new Date(Date.now() + 7 * 86_400_000).toISOString() });

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--autoplay-policy=no-user-gesture-required"],
  });
  try {
    const context = await browser.newContext({ viewport: LAPTOP, deviceScaleFactor: 1 });
    const page = await context.newPage();
    if (devLink) await shoot(page, "setup", `/settings/setup/${devLink}`);
    await shoot(page, "login", "/settings/login");
    await page.getByLabel("Email").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => !u.pathname.startsWith("/settings/login"));

    await shoot(page, "api-keys", "/settings/keys");
    await shoot(page, "webhooks", "/settings/webhooks");
    await shoot(page, "webhook-log", `/settings/webhooks/${endpoint.id}`);
    await shoot(page, "videos", "/settings/videos");
    await shoot(page, "video", `/settings/videos/${video.id}`, playing("player"));
    await shoot(page, "live-streams", "/settings/live");
    await shoot(page, "live-stream", `/settings/live/${stream.id}`);
    await shoot(page, "organization", "/settings/organization");
    await shoot(page, "members", "/settings/members");
    // The confirmation step (works without JavaScript): revoking the live key.
    await shoot(page, "confirm-revoke", `/settings/keys/${apiKey.split("_")[2]}/revoke`);

    // Phone width: the same session in a narrow viewport.
    await page.setViewportSize(PHONE);
    await shoot(page, "phone-videos", "/settings/videos");
    await shoot(page, "phone-video", `/settings/videos/${video.id}`, playing("player"));
    await shoot(page, "phone-live-stream", `/settings/live/${stream.id}`);
    await context.close();

    // A viewer on API keys: the 403 page.
    const viewerContext = await browser.newContext({ viewport: LAPTOP, deviceScaleFactor: 1 });
    const viewerPage = await viewerContext.newPage();
    await viewerPage.goto(`${base}/settings/login`);
    await viewerPage.getByLabel("Email").fill(viewer.email);
    await viewerPage.getByLabel("Password").fill(viewer.password);
    await viewerPage.getByRole("button", { name: "Sign in" }).click();
    await viewerPage.waitForURL((u) => !u.pathname.startsWith("/settings/login"));
    await shoot(viewerPage, "forbidden", "/settings/keys");
    await viewerContext.close();
  } finally {
    await browser.close();
  }
} finally {
  await service.stop();
  receiver.stop(true);
  rmSync(dataDir, { recursive: true, force: true });
}
