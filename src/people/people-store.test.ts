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
import { createPeopleStore } from "./people-store.ts";
import { SESSION_IDLE_MS, SESSION_MAX_MS, SETUP_TTL_MS, sha256 } from "./people-rules.ts";

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
}, 60_000);

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
}, 60_000);

test("invitations: roles checked, removing a member deletes their sessions and links", async () => {
  const people = createPeopleStore(database, { now });
  await expect(people.invite(orgId, "dev@example.com", "owner")).rejects.toBeInstanceOf(InvalidInput);
  await expect(people.invite(orgId, "not an email", "viewer")).rejects.toBeInstanceOf(InvalidInput);
  const { token, userId } = withLink(await people.invite(orgId, "dev@example.com", "developer"));
  // Invited again before using the link: a fresh link for the same pending member, the first one dead.
  const again = withLink(await people.invite(orgId, "DEV@example.com", "developer"));
  expect(again.userId).toBe(userId);
  expect(await people.peekSetup(token)).toBeNull();
  expect((await people.listMembers(orgId)).find((m) => m.userId === userId)).toMatchObject({ role: "developer", active: false });
  expect(await people.completeSetup(again.token, "developer password")).toEqual({ userId, orgId });
  await expect(people.invite(orgId, "dev@example.com", "viewer")).rejects.toBeInstanceOf(InvalidInput);
  const s = await people.createSession(userId, orgId);
  expect((await people.sessionMember(s.token))?.role).toBe("developer");

  const owner = (await people.listMembers(orgId)).find((m) => m.role === "owner")!;
  expect(await people.removeMember(orgId, owner.userId)).toBe(false);
  expect(await people.removeMember(orgId, userId)).toBe(true);
  expect(await people.sessionMember(s.token)).toBeNull();
  expect(await people.verifyLogin("dev@example.com", "developer password")).toBeNull();
  expect((await database.client.execute({ sql: "SELECT count(*) FROM users WHERE id = ?", args: [userId] })).rows[0]![0]).toBe(0);
}, 60_000);

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
}, 60_000);

const saltOf = async (email: string) =>
  (await database.client.execute({ sql: "SELECT password_hash FROM users WHERE email = ? AND password_hash IS NOT NULL", args: [email] })).rows.map((r) => String(r[0]).split("$")[4]);

test("shown links (no SMTP): every organization's invitation makes its own account, the answer the same whether the email exists elsewhere (issue 23 item 1)", async () => {
  const people = createPeopleStore(database, { now });
  clock = Date.now();
  const a = (await createOrgStore(database).createOrg("A")).org.id;
  const b = (await createOrgStore(database).createOrg("B")).org.id;
  // B's owner pre-registers the email and chooses its password.
  const inB = await people.invite(b, "newhire@a.test", "viewer");
  expect(Object.keys(inB).sort()).toEqual(["token", "userId"]);
  expect(await people.completeSetup(inB.token, "chosen by B's owner")).toEqual({ userId: inB.userId, orgId: b });
  // A invites the same email: a link of its own, a different account, same shape of answer.
  const inA = await people.invite(a, "NewHire@a.test", "admin");
  expect(Object.keys(inA).sort()).toEqual(["token", "userId"]);
  expect(inA.userId).not.toBe(inB.userId);
  expect(await people.peekSetup(inA.token)).toMatchObject({ email: "newhire@a.test", orgId: a, delivered: false, joinsAccount: false });
  // And the operator's new organization the same.
  const c = (await createOrgStore(database).createOrg("C")).org.id;
  const inC = await people.createOwner(c, "newhire@a.test");
  expect(inC.userId).not.toBe(inB.userId);

  // B's password opens B only; the real person's opens A only.
  expect(await people.verifyLogin("newhire@a.test", "chosen by B's owner")).toEqual({ userId: inB.userId, orgId: b });
  expect(await people.completeSetup(inA.token, "the real newhire's")).toEqual({ userId: inA.userId, orgId: a });
  expect(await people.verifyLogin("newhire@a.test", "the real newhire's")).toEqual({ userId: inA.userId, orgId: a });
  expect(await people.organizationsOf(inB.userId)).toEqual([{ id: b, name: "B", role: "viewer" }]);
  const s = await people.createSession(inB.userId, b);
  expect(await people.switchOrganization(s.token, a)).toBe(false);
  expect(await people.switchOrganization(s.token, c)).toBe(false);
  // One salt for the email's accounts: a sign-in costs one argon2id computation however many there are.
  const salts = await saltOf("newhire@a.test");
  expect(salts.length).toBe(2);
  expect(new Set(salts).size).toBe(1);

  // A link for a user who has a password (made by hand, or before these rules) is dead: not shown, not usable.
  const forged = "forged-link-token-for-newhire-0123456789abcdefghijk";
  await database.client.execute({
    sql: "INSERT INTO setup_tokens (token_hash, user_id, org_id, purpose, created_at, expires_at) VALUES (?, ?, ?, 'invite', ?, ?)",
    args: [sha256(forged), inA.userId, a, clock, clock + SETUP_TTL_MS],
  });
  expect(await people.peekSetup(forged)).toBeNull();
  expect(await people.completeSetup(forged, "the attacker's password")).toBeNull();
  expect(await people.verifyLogin("newhire@a.test", "the attacker's password")).toBeNull();
}, 60_000);

test("mailed links prove the email: the account is the email's own; another organization's mailed invitation joins it with its password", async () => {
  const people = createPeopleStore(database, { now });
  clock = Date.now();
  const a = (await createOrgStore(database).createOrg("Mail A")).org.id;
  const b = (await createOrgStore(database).createOrg("Mail B")).org.id;
  // Before anything, the owner of S made an account of S for the address (shown link).
  const sq = (await createOrgStore(database).createOrg("Mail S")).org.id;
  const squat = await people.invite(sq, "proven@a.test", "viewer");
  expect(await people.completeSetup(squat.token, "squatter's password")).not.toBeNull();

  const first = await people.invite(a, "proven@a.test", "developer", { delivered: true });
  expect(await people.peekSetup(first.token)).toMatchObject({ delivered: true, joinsAccount: false });
  expect(await people.completeSetup(first.token, "the holder's password")).toEqual({ userId: first.userId, orgId: a });
  const proven = (await database.client.execute({ sql: "SELECT scope_org_id FROM users WHERE id = ?", args: [first.userId] })).rows[0]![0];
  expect(proven).toBeNull();

  // B invites by mail: the holder joins with the password they have; no new password is chosen.
  const second = await people.invite(b, "proven@a.test", "admin", { delivered: true });
  expect(await people.peekSetup(second.token)).toMatchObject({ orgName: "Mail B", joinsAccount: true });
  expect(await people.completeSetup(second.token, "a new password!!")).toBe("join");
  expect(await people.acceptInvitation(second.token, "squatter's password")).toBeNull();
  expect(await people.acceptInvitation(second.token, "the holder's password")).toEqual({ userId: first.userId, orgId: b });
  expect(await people.acceptInvitation(second.token, "the holder's password")).toBeNull();
  expect((await people.organizationsOf(first.userId)).map((o) => [o.id, o.role])).toEqual([
    [a, "developer"],
    [b, "admin"],
  ]);
  // S's own account for the address is untouched and still S's only.
  expect(await people.verifyLogin("proven@a.test", "squatter's password")).toEqual({ userId: squat.userId, orgId: sq });
  expect(await people.verifyLogin("proven@a.test", "the holder's password")).toEqual({ userId: first.userId, orgId: a });
  const s = await people.createSession(first.userId, a);
  expect(await people.switchOrganization(s.token, b)).toBe(true);
  expect(await people.sessionMember(s.token)).toMatchObject({ role: "admin", org: { id: b } });
  // A shown link never joins the proven account: it makes an account of that organization.
  const c = (await createOrgStore(database).createOrg("Mail C")).org.id;
  const shown = await people.invite(c, "proven@a.test", "viewer");
  expect(await people.peekSetup(shown.token)).toMatchObject({ joinsAccount: false });
  expect(shown.userId).not.toBe(first.userId);
  expect(await people.completeSetup(shown.token, "c's own password")).toEqual({ userId: shown.userId, orgId: c });
  expect((await people.organizationsOf(first.userId)).map((o) => o.id)).not.toContain(c);
}, 60_000);
