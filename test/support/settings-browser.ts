/**
 * The settings screen as a person uses it (issue 13): Debian's Chromium driven
 * by playwright-core (see browser.ts for why), against a real test service.
 * Every settings test starts from `settingsScreen()` inside its describe, so
 * its file states only what it checks. Also: the operator CLI in another
 * process, a setup link used in the browser, the login form.
 */
import { afterAll, beforeAll } from "bun:test";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { setupUrl } from "../../src/people/people-rules.ts";
import { peopleFor } from "../../src/settings/session-guard.ts";
import type { Role } from "../../src/settings/types.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "./browser.ts";
import { startTestService, type TestService } from "./test-service.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

export interface Person {
  email: string;
  password: string;
}

export interface SettingsScreen {
  /** The service (set in beforeAll). */
  t: TestService;
  browser: Browser;
  /** A person of the test organization with a password, made through the people store (what the setup link ends in). */
  addMember(role: Role, email?: string): Promise<Person>;
  /** The person signed in through the login page, in a browser context of their own (their own cookies). */
  signIn(who: Person): Promise<Page>;
  /** `signIn(await addMember(role))`. */
  signInAs(role: Role): Promise<Page>;
  /** A setup link for a new member (the owner when no role is given), as the CLI and the Members page hand out. */
  setupLink(email: string, role?: Exclude<Role, "owner">): Promise<string>;
}

/**
 * Registers beforeAll/afterAll in the calling describe: a test service (with
 * `env`, then `prepare` run on it) and Chromium, both closed after the tests.
 */
export function settingsScreen(opts: { env?: Record<string, string>; prepare?: (t: TestService) => Promise<unknown> } = {}): SettingsScreen {
  const screen: SettingsScreen = {
    t: undefined as unknown as TestService,
    browser: undefined as unknown as Browser,
    async addMember(role, email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.com`) {
      const password = `pw-${crypto.randomUUID()}`;
      const token = (await screen.setupLink(email, role === "owner" ? undefined : role)).split("/").at(-1)!;
      if (!(await peopleFor(screen.t.service.database).completeSetup(token, password))) throw new Error("setup link refused");
      return { email, password };
    },
    async signIn(who) {
      const context = await screen.browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await fillSignIn(page, screen.t.base, who.email, who.password);
      await page.waitForURL((u) => !u.pathname.startsWith("/settings/login"));
      return page;
    },
    async signInAs(role) {
      return screen.signIn(await screen.addMember(role));
    },
    async setupLink(email, role) {
      const people = peopleFor(screen.t.service.database);
      const { token } = role ? await people.invite(screen.t.orgId, email, role) : await people.createOwner(screen.t.orgId, email);
      if (!token) throw new Error(`${email} already has a password: no setup link`);
      return setupUrl(screen.t.base, token);
    },
  };
  beforeAll(async () => {
    screen.t = await startTestService({ env: opts.env });
    await opts.prepare?.(screen.t);
    screen.browser = await launchChromium();
  });
  afterAll(async () => {
    await screen.browser?.close();
    await screen.t?.stop();
  });
  return screen;
}

/** The operator CLI: another process on the service's DATA_DIR and database, BASE_URL the service's. */
export async function cli(t: TestService, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return cliWithEnv(t, {}, ...args);
}

/** `cli` with more environment (SMTP_URL, …). */
export async function cliWithEnv(t: TestService, env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { ...process.env, DATA_DIR: t.dataDir, DATABASE_URL: t.service.config.databaseUrl, BASE_URL: t.base, ...env },
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

/** The login page's "Email", "Password" and "Sign in", whatever the outcome (a refusal stays on the page with its alert). */
export async function fillSignIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/settings/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForLoadState();
}

/** Waits until the video page's player (#player) has played past 1 s with decoded pictures; muted autoplay may need a nudge in headless Chromium. */
export async function playerPlays(page: Page): Promise<void> {
  await page.waitForFunction(
    `(() => {
      const v = document.getElementById("player");
      if (v && v.paused && v.readyState >= 2) v.play().catch(() => {});
      return !!v && v.currentTime > 1 && v.videoWidth > 0;
    })()`,
    null,
    { timeout: 30_000, polling: 200 },
  );
}
