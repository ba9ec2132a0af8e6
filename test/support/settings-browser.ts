/**
 * The settings screen as a person uses it (issue 13): Debian's Chromium driven
 * by playwright-core (see browser.ts for why), against a real test service.
 * Helpers: the operator CLI in another process, an owner or member signed in
 * through their setup link, a fresh browser context per person.
 */
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { peopleFor } from "../../src/settings/session-guard.ts";
import { setupUrl } from "../../src/settings/people-store.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "./browser.ts";
import type { TestService } from "./test-service.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

/** The operator CLI: another process on the service's DATA_DIR and database, BASE_URL the service's. */
export async function cli(t: TestService, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(["bun", CLI, ...args], {
    env: { ...process.env, DATA_DIR: t.dataDir, DATABASE_URL: t.service.config.databaseUrl, BASE_URL: t.base },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

/** Opens a setup link, sets the password as a person would (labels "Password", "Confirm password", button "Set password"). */
export async function useSetupLink(page: Page, url: string, password: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByLabel("Confirm password").fill(password);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/settings/setup/"));
}

export async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/settings/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForLoadState();
}

/** A person with their own cookies, signed in through a fresh setup link (owner of the test organization unless a role is given). */
export async function personContext(browser: Browser, t: TestService, email: string, password: string, role?: "admin" | "developer" | "viewer"): Promise<{ context: BrowserContext; page: Page }> {
  const people = peopleFor(t.service.database);
  const { token } = role ? await people.invite(t.orgId, email, role) : await people.createOwner(t.orgId, email);
  const context = await browser.newContext();
  const page = await context.newPage();
  await useSetupLink(page, setupUrl(t.base, token), password);
  return { context, page };
}
