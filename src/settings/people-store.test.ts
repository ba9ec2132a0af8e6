import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Config, loadConfig } from "../config.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { InvalidInput } from "../errors.ts";
import { createOrgStore } from "../orgs/org-store.ts";
import { silentLogger } from "../log.ts";
import { createRetention } from "../retention/retention.ts";
import { createPeopleStore, SESSION_IDLE_MS, SESSION_MAX_MS, SETUP_TTL_MS, sha256 } from "./people-store.ts";

let dir: string;
let config: Config;
let database: Database;
let orgId: string;
let clock = Date.now();
const now = () => clock;
/** An addition that must have issued a setup link (a new email). */
const withLink = <T extends { token: string | null }>(r: T) => {
  if (!r.token) throw new Error("no setup link");
  return { ...r, token: r.token };
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "people-"));
  config = loadConfig({ DATA_DIR: dir });
  database = await createDatabase({ url: config.databaseUrl });
  orgId = (await createOrgStore(database).createOrg("people")).org.id;
});
afterAll(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a setup link works once, stores only its hash, and signs the owner in with an argon2id password", async () => {
  const people = createPeopleStore(database, { now });
  const { token, userId } = withLink(await people.createOwner(orgId, " Owner@Example.COM "));
  expect(token.length).toBeGreaterThanOrEqual(43);
  const stored = await database.client.execute("SELECT token_hash FROM setup_tokens");
  expect(stored.rows.map((r) => r[0])).toEqual([sha256(token)]);
  expect(await people.peekSetup(token)).toMatchObject({ email: "owner@example.com", userId, orgId });

  await expect(people.completeSetup(token, "short")).rejects.toBeInstanceOf(InvalidInput);
  expect(await people.completeSetup(token, "correct horse battery")).toEqual({ userId, orgId });
  expect(await people.completeSetup(token, "another password!")).toBeNull();
  expect(await people.peekSetup(token)).toBeNull();

  const hash = (await database.client.execute("SELECT password_hash FROM users")).rows[0]![0] as string;
  expect(hash.startsWith("$argon2id$")).toBe(true);
  expect(await people.verifyLogin("OWNER@example.com", "correct horse battery")).toEqual({ userId, orgId });
  expect(await people.verifyLogin("owner@example.com", "wrong password!!")).toBeNull();
  expect(await people.verifyLogin("nobody@example.com", "correct horse battery")).toBeNull();
  // One owner per organization.
  await expect(people.createOwner(orgId, "second@example.com")).rejects.toBeInstanceOf(InvalidInput);
});

test("sessions: the cookie token is stored hashed, expires when idle and absolutely, ends on sign-out", async () => {
  const people = createPeopleStore(database, { now });
  const { userId } = (await people.listMembers(orgId)).find((m) => m.role === "owner")!;
  const s = await people.createSession(userId, orgId);
  const rows = await database.client.execute("SELECT id_hash FROM sessions");
  expect(rows.rows.map((r) => r[0])).toContain(sha256(s.token));
  expect(rows.rows.map((r) => r[0])).not.toContain(s.token);
  const m = await people.sessionMember(s.token);
  expect(m).toMatchObject({ userId, role: "owner", email: "owner@example.com", csrfToken: s.csrfToken });
  expect(m!.org.id).toBe(orgId);

  // Used every few hours: still valid after a day, until the absolute limit.
  const start = clock;
  for (let t = start + 6 * 3600_000; t < start + SESSION_MAX_MS; t += 6 * 3600_000) {
    clock = t;
    expect(await people.sessionMember(s.token)).not.toBeNull();
    await Bun.sleep(20); // the touch is fire-and-forget
  }
  clock = start + SESSION_MAX_MS + 1;
  expect(await people.sessionMember(s.token)).toBeNull();

  // Idle for longer than the idle limit.
  clock = start;
  const idle = await people.createSession(userId, orgId);
  clock = start + SESSION_IDLE_MS + 1;
  expect(await people.sessionMember(idle.token)).toBeNull();

  clock = Date.now();
  const out = await people.createSession(userId, orgId);
  await people.deleteSession(out.token);
  expect(await people.sessionMember(out.token)).toBeNull();
});

test("invitations: roles checked, removing a member deletes their sessions and links", async () => {
  const people = createPeopleStore(database, { now });
  await expect(people.invite(orgId, "dev@example.com", "owner")).rejects.toBeInstanceOf(InvalidInput);
  await expect(people.invite(orgId, "not an email", "viewer")).rejects.toBeInstanceOf(InvalidInput);
  const { token, userId } = withLink(await people.invite(orgId, "dev@example.com", "developer"));
  await expect(people.invite(orgId, "DEV@example.com", "viewer")).rejects.toBeInstanceOf(InvalidInput);
  expect((await people.listMembers(orgId)).find((m) => m.userId === userId)).toMatchObject({ role: "developer", active: false });
  await people.completeSetup(token, "developer password");
  const s = await people.createSession(userId, orgId);
  expect((await people.sessionMember(s.token))?.role).toBe("developer");

  const owner = (await people.listMembers(orgId)).find((m) => m.role === "owner")!;
  expect(await people.removeMember(orgId, owner.userId)).toBe(false);
  expect(await people.removeMember(orgId, userId)).toBe(true);
  expect(await people.sessionMember(s.token)).toBeNull();
  expect(await people.verifyLogin("dev@example.com", "developer password")).toBeNull();
  expect((await database.client.execute({ sql: "SELECT count(*) FROM users WHERE id = ?", args: [userId] })).rows[0]![0]).toBe(0);
});

test("retention deletes expired sessions and setup links, and keeps the others", async () => {
  const people = createPeopleStore(database, { now });
  clock = Date.now();
  const { userId, token } = withLink(await people.invite(orgId, "later@example.com", "viewer"));
  const live = await people.createSession(userId, orgId);
  clock = Date.now() - SESSION_MAX_MS - SETUP_TTL_MS;
  const old = await people.createSession(userId, orgId);
  const { token: oldLink } = withLink(await people.invite(orgId, "gone@example.com", "viewer"));
  clock = Date.now();

  const retention = createRetention({ database, config, logger: silentLogger });
  const report = await retention.sweep(Date.now());
  expect(report.sessions).toBeGreaterThanOrEqual(1);
  expect(report.setup_tokens).toBeGreaterThanOrEqual(1);
  const hashes = (await database.client.execute("SELECT id_hash FROM sessions")).rows.map((r) => r[0]);
  expect(hashes).toContain(sha256(live.token));
  expect(hashes).not.toContain(sha256(old.token));
  const links = (await database.client.execute("SELECT token_hash FROM setup_tokens")).rows.map((r) => r[0]);
  expect(links).toContain(sha256(token));
  expect(links).not.toContain(sha256(oldLink));
});

test("a person who has a password is added without a link, and no link ever replaces a password (issue 13 audit: cross-organization takeover)", async () => {
  const people = createPeopleStore(database, { now });
  clock = Date.now();
  const other = (await createOrgStore(database).createOrg("other")).org.id;
  const a = withLink(await people.invite(orgId, "alice@example.com", "admin"));
  expect(await people.completeSetup(a.token, "alice's own password")).not.toBeNull();

  // Another organization's owner invites the same email: a membership, no link.
  const added = await people.invite(other, "Alice@example.com", "viewer");
  expect(added).toEqual({ userId: a.userId, token: null, existingAccount: true });
  expect((await database.client.execute({ sql: "SELECT count(*) FROM setup_tokens WHERE user_id = ? AND used_at IS NULL", args: [a.userId] })).rows[0]![0]).toBe(0);
  expect((await people.organizationsOf(a.userId)).map((o) => [o.id, o.role])).toEqual([
    [orgId, "admin"],
    [other, "viewer"],
  ]);

  // A link for a user who has a password (made by hand, or before this rule) is dead: not shown, not usable.
  const forged = "forged-link-token-for-alice-0123456789abcdefghijk";
  await database.client.execute({
    sql: "INSERT INTO setup_tokens (token_hash, user_id, org_id, purpose, created_at, expires_at) VALUES (?, ?, ?, 'invite', ?, ?)",
    args: [sha256(forged), a.userId, other, clock, clock + SETUP_TTL_MS],
  });
  expect(await people.peekSetup(forged)).toBeNull();
  expect(await people.completeSetup(forged, "the attacker's password")).toBeNull();
  expect(await people.verifyLogin("alice@example.com", "the attacker's password")).toBeNull();
  expect(await people.verifyLogin("alice@example.com", "alice's own password")).toEqual({ userId: a.userId, orgId });

  // A person still without a password belongs to one organization only: a second one's link would let its owner pick the password.
  withLink(await people.invite(orgId, "pending@example.com", "viewer"));
  await expect(people.invite(other, "pending@example.com", "viewer")).rejects.toBeInstanceOf(InvalidInput);
  await expect(people.checkNewOwner("pending@example.com")).rejects.toBeInstanceOf(InvalidInput);
  await people.checkNewOwner("alice@example.com");

  // The session's organization changes only to one the person belongs to.
  const s = await people.createSession(a.userId, orgId);
  const third = (await createOrgStore(database).createOrg("third")).org.id;
  expect(await people.switchOrganization(s.token, third)).toBe(false);
  expect((await people.sessionMember(s.token))?.org.id).toBe(orgId);
  expect(await people.switchOrganization(s.token, other)).toBe(true);
  expect(await people.sessionMember(s.token)).toMatchObject({ role: "viewer", org: { id: other } });
});
