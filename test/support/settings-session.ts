import { type Browser, chromium, type Page } from "playwright-core";
import { peopleFor } from "../../src/settings/session-guard.ts";
import type { Role } from "../../src/settings/types.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "./browser.ts";
import type { TestService } from "./test-service.ts";

/**
 * A person of the test service's organization, signed in to the settings
 * screen in Chromium the way a user does: the member and their password are
 * made through the people store (what the CLI's setup link ends in), then the
 * login page's "Email", "Password" and "Sign in".
 */
export async function addMember(t: TestService, role: Role, email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.com`) {
  const people = peopleFor(t.service.database);
  const password = `pw-${crypto.randomUUID()}`;
  const { token } = role === "owner" ? await people.createOwner(t.orgId, email) : await people.invite(t.orgId, email, role);
  if (!(await people.completeSetup(token, password))) throw new Error("setup link refused");
  return { email, password };
}

export async function signIn(browser: Browser, t: TestService, who: { email: string; password: string }): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${t.base}/settings/login`);
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/settings/login"));
  return page;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
