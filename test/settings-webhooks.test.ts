import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { verifyWebhook } from "../src/webhooks/verify-webhook.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { settingsScreen } from "./support/settings-browser.ts";
import { startWebhookReceiver, TEST_CA_FILE, type WebhookReceiver } from "./support/webhook-receiver.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

describe.skipIf(!hasChromium)("settings screen: webhooks (issue 13 point 4)", () => {
  const screen = settingsScreen({ env: { WEBHOOK_CA_FILE: TEST_CA_FILE } });
  let receiver: WebhookReceiver;

  beforeAll(() => {
    receiver = startWebhookReceiver(() => new Response("ok", { status: 200 }));
  });
  afterAll(() => receiver?.stop());

  test("create an endpoint, send a test event to a real HTTPS receiver, see it in the log, resend, delete", async () => {
    const page = await screen.signInAs("developer");
    await page.getByRole("link", { name: "Webhooks", exact: true }).click();
    expect(await page.getByText("No webhook endpoints yet").isVisible()).toBe(true);

    // The API's own validation, shown on the page: http is refused with the API's message, the form keeps its input.
    await page.getByLabel("URL", { exact: true }).fill("http://example.com/hook");
    await page.getByLabel("VIDEO_UPLOADED").check();
    await page.getByRole("button", { name: "Create endpoint" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("must use https");
    expect(await page.getByLabel("VIDEO_UPLOADED").isChecked()).toBe(true);

    await page.getByLabel("URL", { exact: true }).fill(receiver.url);
    await page.getByLabel("VIDEO_TRANSCODING_COMPLETED").check();
    await page.getByLabel("Description (optional)").fill("Receiver under test");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    const secret = await page.getByLabel("Signing secret", { exact: true }).inputValue();
    expect(secret).toStartWith("whsec_");
    expect(await page.getByRole("button", { name: "Copy signing secret" }).isVisible()).toBe(true);

    // The endpoint is in the list (the secret is not), then its page.
    await page.getByRole("link", { name: "Webhooks", exact: true }).click();
    expect(await page.content()).not.toContain(secret);
    await page.getByRole("link", { name: receiver.url }).click();
    expect(await page.getByText("No deliveries yet").isVisible()).toBe(true);

    await page.getByLabel("Event").selectOption("VIDEO_TRANSCODING_COMPLETED");
    await page.getByRole("button", { name: "Send test event" }).click();
    await receiver.waitFor(1);
    const first = receiver.received[0]!;
    expect(first.headers.get("x-service-event")).toBe("VIDEO_TRANSCODING_COMPLETED");
    // Signed with the secret the page showed once.
    expect(verifyWebhook({ body: first.body, headers: first.headers, secret })).toBe(true);

    const delivery = page.locator("li.delivery");
    expect(await delivery.count()).toBe(1);
    expect(await delivery.getAttribute("data-delivery-id")).toBe(first.headers.get("x-service-delivery"));
    expect(await delivery.innerText()).toContain("DELIVERED");
    expect(await delivery.locator("td.attempt-status").allInnerTexts()).toEqual(["200"]);

    await delivery.getByRole("button", { name: "Resend" }).click();
    await receiver.waitFor(2);
    expect(receiver.received[1]!.headers.get("x-service-delivery")).toBe(first.headers.get("x-service-delivery"));
    expect(await page.locator("li.delivery td.attempt-status").allInnerTexts()).toEqual(["200", "200"]);
    expect(await page.locator("li.delivery").innerText()).toContain("(manual)");

    page.once("dialog", (d) => d.accept());
    await page.getByRole("button", { name: "Delete endpoint" }).click();
    await page.waitForURL((u) => u.pathname === "/settings/webhooks");
    expect(await page.getByText("No webhook endpoints yet").isVisible()).toBe(true);
    const api = await ok(screen.t.api("/webhooks/"), "listWebhooks");
    expect(api.data.items).toEqual([]);
    await page.context().close();
  }, 120_000);

  test("a viewer reads but cannot change; another organization's endpoint is a 404 page, as a missing one", async () => {
    const created = await ok(screen.t.api("/webhooks/", { method: "POST", json: { url: `${receiver.url}/viewer`, events: ["VIDEO_UPLOADED"] } }), "createWebhook");
    const id = created.data.endpoint.id;
    const viewer = await screen.signInAs("viewer");
    await viewer.goto(`${screen.t.base}/settings/webhooks`);
    expect(await viewer.getByRole("link", { name: `${receiver.url}/viewer` }).isVisible()).toBe(true);
    expect(await viewer.getByRole("button", { name: "Create endpoint" }).count()).toBe(0);
    await viewer.goto(`${screen.t.base}/settings/webhooks/${id}`);
    expect(await viewer.getByRole("button", { name: "Send test event" }).count()).toBe(0);
    // A forged POST from the viewer's own session is refused by role.
    const csrf = await viewer.locator('input[name="_csrf"]').first().inputValue();
    const forged = await viewer.request.post(`${screen.t.base}/settings/webhooks/${id}/test`, { form: { _csrf: csrf, event: "VIDEO_UPLOADED" }, headers: { origin: screen.t.base } });
    expect(forged.status()).toBe(403);
    await viewer.context().close();

    // Another organization's owner asks for this organization's endpoint.
    const other = await screen.t.service.orgs.createOrg("other");
    const people = (await import("../src/settings/session-guard.ts")).peopleFor(screen.t.service.database);
    const { token } = await people.createOwner(other.org.id, "owner@other.example");
    await people.completeSetup(token!, "other-owner-password");
    const stranger = await screen.signIn({ email: "owner@other.example", password: "other-owner-password" });
    const foreign = await stranger.goto(`${screen.t.base}/settings/webhooks/${id}`);
    const missing = await stranger.goto(`${screen.t.base}/settings/webhooks/whe_doesnotexist`);
    expect(foreign!.status()).toBe(404);
    expect(missing!.status()).toBe(404);
    expect(await stranger.locator("main").innerText()).toContain("Nothing here");
    await stranger.context().close();
  }, 120_000);
});
