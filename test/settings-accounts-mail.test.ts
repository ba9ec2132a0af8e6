/**
 * Issue 23 item 1 with SMTP_URL: invitation links go to the address itself
 * (a real `smtp-server` on loopback receives them), never to the inviter's
 * page or terminal. The mailed link proves the email: the first one sets the
 * password of the email's own account; a second organization's mailed
 * invitation joins that account once its holder enters its password. An
 * account someone else pre-registered (shown link, before SMTP) stays in its
 * own organization.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { peopleFor } from "../src/settings/session-guard.ts";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { cliWithEnv, settingsScreen, useSetupLink } from "./support/settings-browser.ts";
import { type SmtpInbox, setupLinkIn, startSmtpInbox } from "./support/smtp-inbox.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const inbox: SmtpInbox = await startSmtpInbox();
afterAll(() => inbox.close());

async function inviteOnPage(page: Page, base: string, email: string, role: string) {
  await page.goto(`${base}/settings/members`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Role").selectOption(role);
  await page.getByRole("button", { name: "Invite member" }).click();
  await page.waitForLoadState();
  return { flash: (await page.getByRole("status").first().innerText()).replaceAll(email, "EMAIL"), html: await page.content() };
}

describe.skipIf(!hasChromium)("settings with SMTP_URL: invitations are mailed to the address", () => {
  const screen = settingsScreen({ env: { SMTP_URL: inbox.url, MAIL_FROM: "vidlive <invites@vidlive.test>" } });

  test("the link reaches the mailbox only; it sets the email's own password; another organization's mailed invitation joins that account with it", async () => {
    const ownerA = await screen.signInAs("owner");
    // A squatter's account of organization S for the address, made before (a shown link, as without SMTP).
    const squatOrg = await screen.t.service.orgs.createOrg("Squat");
    const people = peopleFor(screen.t.service.database);
    const squat = await people.invite(squatOrg.org.id, "newhire@a.test", "viewer");
    expect(await people.completeSetup(squat.token, "chosen by the squatter")).not.toBeNull();

    // A invites it, and a fresh email: the same answer, no link on the page.
    const taken = await inviteOnPage(ownerA, screen.t.base, "newhire@a.test", "admin");
    const fresh = await inviteOnPage(ownerA, screen.t.base, "fresh@a.test", "admin");
    expect(taken.flash).toBe(fresh.flash);
    expect(taken.flash).toContain("Invitation mailed to EMAIL");
    for (const answer of [taken, fresh]) expect(answer.html).not.toContain("/settings/setup/");

    const mail = await inbox.waitFor("newhire@a.test");
    expect(mail.raw).toContain("invites@vidlive.test");
    expect(mail.raw).toMatch(/Subject: Your invitation to test on vidlive/);
    const link = setupLinkIn(mail);
    expect(link).toStartWith(`${screen.t.base}/settings/setup/`);
    const holder = await (await screen.browser.newContext()).newPage();
    await useSetupLink(holder, link, "the holder's own password");
    expect(await holder.locator("header .org").innerText()).toBe("test");
    expect(await holder.locator("header .badge").innerText()).toBe("admin");

    // Organization B, its owner invited by mail through the CLI.
    const created = await cliWithEnv(screen.t, { SMTP_URL: inbox.url }, "org", "create", "--name", "Beta", "--owner-email", "owner-b@example.com", "--json");
    expect(created.code).toBe(0);
    const b = JSON.parse(created.out);
    expect(b.owner_invitation).toBe("mailed");
    expect(created.out).not.toContain("/settings/setup/");
    const ownerB = await (await screen.browser.newContext()).newPage();
    await useSetupLink(ownerB, setupLinkIn(await inbox.waitFor("owner-b@example.com")), "owner b password");
    expect(await ownerB.locator("header .org").innerText()).toBe("Beta");

    // B invites the holder: the same answer again; the mailed link asks for the existing password and joins.
    const second = await inviteOnPage(ownerB, screen.t.base, "newhire@a.test", "developer");
    expect(second.flash).toBe(taken.flash);
    const again = await (async () => {
      for (let i = 0; i < 600; i++) {
        const all = inbox.mails.filter((m) => m.to.includes("newhire@a.test"));
        if (all.length >= 2) return all[1]!;
        await Bun.sleep(50);
      }
      throw new Error("no second mail");
    })();
    const join = await (await screen.browser.newContext()).newPage();
    await join.goto(setupLinkIn(again));
    expect(await join.locator("main").innerText()).toContain("You already have an account for newhire@a.test");
    await join.getByLabel("Password", { exact: true }).fill("chosen by the squatter");
    await join.getByRole("button", { name: "Join Beta" }).click();
    await join.waitForLoadState();
    expect(await join.getByRole("alert").innerText()).toBe("Wrong password.");
    await join.getByLabel("Password", { exact: true }).fill("the holder's own password");
    await join.getByRole("button", { name: "Join Beta" }).click();
    await join.waitForURL((u) => !u.pathname.startsWith("/settings/setup/"));
    expect(await join.locator("header .org").innerText()).toBe("Beta");
    expect(await join.locator("header .badge").innerText()).toBe("developer");
    const choices = await join.getByLabel("Switch organization").locator("option").allInnerTexts();
    expect(choices.join(" ")).toContain("test");
    expect(choices.join(" ")).toContain("Beta");

    // The squatter's password still opens only the squatter's own organization.
    const asSquatter = await fetch(`${screen.t.base}/settings/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: screen.t.base },
      body: new URLSearchParams({ email: "newhire@a.test", password: "chosen by the squatter" }).toString(),
    });
    const page = await (await fetch(`${screen.t.base}/settings/videos`, { headers: { cookie: asSquatter.headers.get("set-cookie")!.split(";")[0]! } })).text();
    expect(page).toContain("Squat");
    expect(page).not.toContain("Switch organization");

    // `org invite` mails too, and prints no link.
    const invited = await cliWithEnv(screen.t, { SMTP_URL: inbox.url }, "org", "invite", "--org", b.org_id, "--email", "cli@a.test", "--role", "viewer", "--json");
    expect(JSON.parse(invited.out)).toEqual({ org_id: b.org_id, setup_url: null, invitation: "mailed" });
    expect(setupLinkIn(await inbox.waitFor("cli@a.test"))).toStartWith(`${screen.t.base}/settings/setup/`);
    for (const p of [ownerA, holder, ownerB, join]) await p.context().close();
  }, 300_000);

  test("an unreachable mail server: `org create --owner-email` exits 1 naming it and creates nothing", async () => {
    const closed = await startSmtpInbox();
    const url = closed.url;
    await closed.close();
    const made = await cliWithEnv(screen.t, { SMTP_URL: url }, "org", "create", "--name", "Unsent", "--owner-email", "x@a.test", "--json");
    expect(made.code).toBe(1);
    expect(made.err).toContain("could not be mailed");
    expect(made.out).toBe("");
    expect((await screen.t.service.orgs.listOrgs()).map((o) => o.name)).not.toContain("Unsent");
  }, 120_000);
});
