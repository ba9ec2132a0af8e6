/**
 * Issue 23 item 1, cross-organization account takeover by pre-registration,
 * black-box against the running service (Chromium, the CLI in another
 * process), without SMTP_URL: links are shown to the inviter, so each one
 * sets the password of an account of the inviting organization only. The
 * owner of B pre-registers newhire@a.test and chooses its password; A's
 * invitation and the operator's `org create --owner-email` must neither let
 * B's owner in nor answer differently because the email exists elsewhere.
 */
import { describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { cli, fillSignIn, settingsScreen, useSetupLink } from "./support/settings-browser.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Invites from the Members page; what the inviter sees: the flash, the shown link (if any), the whole page. */
async function inviteOnPage(page: Page, base: string, email: string, role: string) {
  await page.goto(`${base}/settings/members`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Role").selectOption(role);
  await page.getByRole("button", { name: "Invite member" }).click();
  await page.waitForLoadState();
  const link = (await page.locator("code#setup-link").count()) ? await page.locator("code#setup-link").innerText() : null;
  const panel = link ? await page.locator('section[aria-labelledby="setup-link-heading"]').innerText() : "";
  // The answer with the email and the link taken out: what must not differ between emails.
  const shape = panel.replaceAll(email, "EMAIL").replace(link ?? "", "LINK");
  return { flash: await page.getByRole("status").first().innerText(), link, shape, html: await page.content() };
}

describe.skipIf(!hasChromium)("settings: no organization gains a member whose password someone outside it set", () => {
  const screen = settingsScreen();

  const login = (email: string, password: string) =>
    fetch(`${screen.t.base}/settings/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: screen.t.base },
      body: form({ email, password }),
    });

  test("B's owner pre-registers newhire@a.test; A's invitation answers as for any email, B's password never opens A, and `org create --owner-email` makes B's owner nothing", async () => {
    // Organization A is the screen's; its owner signs in.
    const ownerA = await screen.signInAs("owner");

    // Organization B, its owner set up through the CLI's link.
    const created = await cli(screen.t, "org", "create", "--name", "Beta Studio", "--owner-email", "owner-b@example.com", "--json");
    expect(created.code).toBe(0);
    const b = JSON.parse(created.out);
    const ownerB = await (await screen.browser.newContext()).newPage();
    await useSetupLink(ownerB, b.owner_setup_url, "owner b password");

    // B's owner invites newhire@a.test, opens the link shown to them and chooses the password.
    const squat = await inviteOnPage(ownerB, screen.t.base, "newhire@a.test", "viewer");
    expect(squat.link).toStartWith(`${screen.t.base}/settings/setup/`);
    const squatter = await (await screen.browser.newContext()).newPage();
    await useSetupLink(squatter, squat.link!, "chosen by B's owner");
    expect(await squatter.locator("header .org").innerText()).toBe("Beta Studio");

    // A invites the same email, and a fresh one: the same kind of answer (a link of A's own), nothing says the email exists elsewhere.
    const taken = await inviteOnPage(ownerA, screen.t.base, "newhire@a.test", "admin");
    const fresh = await inviteOnPage(ownerA, screen.t.base, "fresh@a.test", "admin");
    for (const answer of [taken, fresh]) {
      expect(answer.link).toStartWith(`${screen.t.base}/settings/setup/`);
      expect(answer.flash).toBe("Invitation created.");
      expect(answer.html).not.toContain("already has an account");
      expect(answer.html).not.toContain("existing password");
    }
    expect(taken.shape).toBe(fresh.shape);

    // B's owner signs in with the password they chose: B's account, in B only; A is refused.
    const asB = await login("newhire@a.test", "chosen by B's owner");
    expect(asB.status).toBe(303);
    const cookie = asB.headers.get("set-cookie")!.split(";")[0]!;
    const home = await fetch(`${screen.t.base}/settings/videos`, { headers: { cookie } });
    const homeHtml = await home.text();
    expect(homeHtml).toContain("Beta Studio");
    expect(homeHtml).not.toContain("Switch organization");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(homeHtml)![1]!;
    const into = await fetch(`${screen.t.base}/settings/switch-organization`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: screen.t.base, "content-type": "application/x-www-form-urlencoded" },
      body: form({ _csrf: csrf, org_id: screen.t.orgId }),
    });
    expect(into.status).toBe(403);

    // The real newhire uses A's link: their own password, signed in to A as admin; B's password is not theirs.
    const newhire = await (await screen.browser.newContext()).newPage();
    await useSetupLink(newhire, taken.link!, "the real newhire's password");
    expect(await newhire.locator("header .org").innerText()).toBe("test");
    expect(await newhire.locator("header .badge").innerText()).toBe("admin");
    await fillSignIn(newhire, screen.t.base, "newhire@a.test", "the real newhire's password");
    expect(await newhire.locator("header .org").innerText()).toBe("test");

    // The operator makes an organization owned by the same email: a link of its own; B's owner gets nothing.
    const made = await cli(screen.t, "org", "create", "--name", "Gamma", "--owner-email", "newhire@a.test", "--json");
    expect(made.code).toBe(0);
    const gamma = JSON.parse(made.out);
    expect(Object.keys(gamma).sort()).toEqual(["api_key", "org_id", "owner_setup_url"]);
    const plain = await cli(screen.t, "org", "create", "--name", "Delta", "--owner-email", "owner-d@example.com", "--json");
    expect(Object.keys(JSON.parse(plain.out)).sort()).toEqual(["api_key", "org_id", "owner_setup_url"]);
    const again = await login("newhire@a.test", "chosen by B's owner");
    const againHtml = await (await fetch(`${screen.t.base}/settings/keys`, { headers: { cookie: again.headers.get("set-cookie")!.split(";")[0]! } })).text();
    expect(againHtml).not.toContain("Gamma");
    const owner = await (await screen.browser.newContext()).newPage();
    await useSetupLink(owner, gamma.owner_setup_url, "gamma owner password");
    expect(await owner.locator("header .org").innerText()).toBe("Gamma");
    expect(await owner.locator("header .badge").innerText()).toBe("owner");
    // Each password opens its own account: three for one email, none reaching another's organization.
    expect((await login("newhire@a.test", "gamma owner password")).status).toBe(303);
    expect((await login("newhire@a.test", "not any of them")).status).toBe(401);

    // `org invite` answers the same for the email and a fresh one: a setup_url each.
    const invited = JSON.parse((await cli(screen.t, "org", "invite", "--org", b.org_id, "--email", "fresh@a.test", "--role", "viewer", "--json")).out);
    expect(invited.setup_url).toStartWith(`${screen.t.base}/settings/setup/`);
    const invitedTaken = JSON.parse((await cli(screen.t, "org", "invite", "--org", gamma.org_id, "--email", "owner-b@example.com", "--role", "viewer", "--json")).out);
    expect(Object.keys(invitedTaken).sort()).toEqual(["org_id", "setup_url"]);
    for (const p of [ownerA, ownerB, squatter, newhire, owner]) await p.context().close();
  }, 300_000);
});
