/**
 * Issue 13 audit, cross-organization takeover: inviting an email that already
 * has an account (in another organization) must not hand the inviter a link
 * that sets that account's password. The person joins at once, keeps their
 * password, and reaches the new organization through the header's switcher.
 */
import { describe, expect, test } from "bun:test";
import { CHROMIUM_MISSING, hasChromium } from "./support/browser.ts";
import { cli, fillSignIn, settingsScreen, useSetupLink } from "./support/settings-browser.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe.skipIf(!hasChromium)("settings: a person in several organizations", () => {
  const screen = settingsScreen();

  const login = (email: string, password: string) =>
    fetch(`${screen.t.base}/settings/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: screen.t.base },
      body: form({ email, password }),
    });

  test("owner B invites A's owner: no setup link anywhere, A's password unchanged, A switches to B with the invited role; no switch to a foreign organization", async () => {
    const ownerA = await screen.addMember("owner");
    const viewerA = await screen.addMember("viewer");

    // Organization B, its owner set up through the CLI's link.
    const created = await cli(screen.t, "org", "create", "--name", "Beta Studio", "--owner-email", "owner-b@example.com", "--json");
    expect(created.code).toBe(0);
    const b = JSON.parse(created.out);
    const ownerBContext = await screen.browser.newContext();
    const ownerB = await ownerBContext.newPage();
    await useSetupLink(ownerB, b.owner_setup_url, "owner b password");

    // Owner B invites A's owner from the Members page.
    await ownerB.goto(`${screen.t.base}/settings/members`);
    await ownerB.getByLabel("Email").fill(ownerA.email);
    await ownerB.getByLabel("Role").selectOption("developer");
    await ownerB.getByRole("button", { name: "Invite member" }).click();
    await ownerB.waitForLoadState();
    const shown = await ownerB.content();
    expect(shown).not.toContain("/settings/setup/");
    expect(await ownerB.getByRole("heading", { name: "Invitation link" }).count()).toBe(0);
    const flash = await ownerB.getByRole("status").first().innerText();
    expect(flash).toContain("already has an account");
    expect(flash).toContain("existing password");
    expect(await ownerB.locator("tbody").innerText()).toContain(ownerA.email);

    // The CLI says the same for another existing account: no setup_url.
    const invited = await cli(screen.t, "org", "invite", "--org", b.org_id, "--email", viewerA.email, "--role", "viewer", "--json");
    expect(invited.code).toBe(0);
    expect(JSON.parse(invited.out)).toEqual({ org_id: b.org_id, setup_url: null, existing_account: true });
    expect(invited.out).not.toContain("/settings/setup/");
    const plain = await cli(screen.t, "org", "invite", "--org", b.org_id, "--email", (await screen.addMember("admin")).email, "--role", "admin");
    expect(plain.out).toContain("sign in with their existing password");
    expect(plain.out).not.toContain("/settings/setup/");

    // A's password still works; a password owner B would pick does not.
    expect((await login(ownerA.email, ownerA.password)).status).toBe(303);
    await fillSignIn(ownerB, screen.t.base, ownerA.email, "owner b picked this");
    expect(await ownerB.getByRole("alert").innerText()).toBe("Wrong email or password.");
    await ownerBContext.close();

    // A signs in (their oldest organization) and switches to B.
    const a = await screen.signIn(ownerA);
    expect(await a.locator("header .org").innerText()).toBe("test");
    const switcher = a.getByLabel("Switch organization");
    await switcher.selectOption(b.org_id);
    await a.getByRole("button", { name: "Switch", exact: true }).click();
    await a.waitForURL(`${screen.t.base}/settings/videos`);
    expect(await a.locator("header .org").innerText()).toBe("Beta Studio");
    expect(await a.locator("header .badge").innerText()).toBe("developer");
    const keys = await a.goto(`${screen.t.base}/settings/keys`);
    expect(keys!.status()).toBe(403);
    const hooks = await a.goto(`${screen.t.base}/settings/webhooks`);
    expect(hooks!.status()).toBe(200);
    expect(await a.getByRole("button", { name: "Create endpoint" }).count()).toBe(1);

    // Switching to an organization A does not belong to is refused, and A stays in B.
    const foreign = await screen.t.service.orgs.createOrg("Not yours");
    const csrf = await a.locator('input[name="_csrf"]').first().inputValue();
    const refused = await a.request.post(`${screen.t.base}/settings/switch-organization`, { form: { _csrf: csrf, org_id: foreign.org.id }, headers: { origin: screen.t.base }, maxRedirects: 0 });
    expect(refused.status()).toBe(403);
    await a.goto(`${screen.t.base}/settings/videos`);
    expect(await a.locator("header .org").innerText()).toBe("Beta Studio");
    // Without the form token: refused too.
    const noToken = await a.request.post(`${screen.t.base}/settings/switch-organization`, { form: { org_id: screen.t.orgId }, headers: { origin: screen.t.base }, maxRedirects: 0 });
    expect(noToken.status()).toBe(403);
    await a.context().close();

    // A member of one organization only has no switcher and cannot switch into B.
    const only = await screen.signInAs("developer");
    expect(await only.getByLabel("Switch organization").count()).toBe(0);
    const token = await only.locator('input[name="_csrf"]').first().inputValue();
    const intoB = await only.request.post(`${screen.t.base}/settings/switch-organization`, { form: { _csrf: token, org_id: b.org_id }, headers: { origin: screen.t.base }, maxRedirects: 0 });
    expect(intoB.status()).toBe(403);
    await only.goto(`${screen.t.base}/settings/videos`);
    expect(await only.locator("header .org").innerText()).toBe("test");
    await only.context().close();
  }, 60_000);
});
