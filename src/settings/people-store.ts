import { and, asc, eq, gt, isNotNull, isNull, lt, ne, sql } from "drizzle-orm";
import type { Database, Db } from "../db/create-database.ts";
import { memberships, organizations, sessions, setupTokens, users } from "../db/schema/index.ts";
import { InvalidInput, NotFound } from "../errors.ts";
import { randomToken } from "../ids.ts";
import { normalizeSettings } from "../orgs/org-settings.ts";
import { hashLike, parsePhc, sameSalt, tagEquals, tagLike } from "./password-hash.ts";
import type { Member, Role } from "./types.ts";

/**
 * People of the settings screen (issue 13): users, their memberships, the
 * one-time setup links, and sessions. Every secret that reaches a browser or a
 * terminal (setup token, session token) is stored as its SHA-256 only, so a
 * copy of the database signs nobody in. Used by the screen and by the CLI
 * (`org create --owner-email`, `org invite`), on the same rows.
 *
 * Accounts (issue 23, docs/decisions.md "Accounts"): an invitation always
 * makes an account of the inviting organization (`scope_org_id`), whatever
 * the email has elsewhere, so the inviter's answer never depends on it. A link
 * shown to the inviter sets that account's password and it stays in that one
 * organization. A link mailed to the address (SMTP_URL, `delivered`) proves
 * the email: the account becomes the email's proven one (scope null), or, if
 * the email already has a proven account, its holder joins with that
 * account's password. No organization ever gains a member whose password was
 * set by someone outside it.
 */

export const SETUP_TTL_MS = 72 * 3600_000;
/** A session ends 12 h after its last request, and 7 days after sign-in whatever happens. */
export const SESSION_IDLE_MS = 12 * 3600_000;
export const SESSION_MAX_MS = 7 * 24 * 3600_000;
/** last_seen_at (and with it expires_at) is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;
export const MIN_PASSWORD_LENGTH = 10;
export const INVITABLE_ROLES = ["admin", "developer", "viewer"] as const satisfies readonly Role[];

export type SetupPurpose = "owner_setup" | "invite";

/** 256 bits: a setup link or a session cookie cannot be guessed. */
const newSecret = () => randomToken(43);

export function sha256(s: string): string {
  return new Bun.CryptoHasher("sha256").update(s).digest("hex");
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function checkEmail(email: string): string {
  const e = normalizeEmail(email);
  if (e.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) throw new InvalidInput({ email: "must be an email address" }, "email must be an email address");
  return e;
}

/** A hash to verify against when the email is unknown, so both cases cost one argon2 verification. */
let dummyHash: Promise<string> | undefined;
const getDummyHash = () => {
  dummyHash ??= Bun.password.hash(randomToken(32), "argon2id");
  return dummyHash;
};

export interface SessionIssued {
  /** The cookie value (shown to the browser only). */
  token: string;
  csrfToken: string;
  expiresAt: number;
}

export interface MemberRow {
  userId: string;
  email: string;
  role: Role;
  createdAt: number;
  /** false until the person used their setup link. */
  active: boolean;
}

export function createPeopleStore(database: Database, opts: { now?: () => number } = {}) {
  const { db } = database;
  const now = opts.now ?? Date.now;
  /** Last last_seen_at write per session hash (in memory; a restart only costs one extra write). */
  const touched = new Map<string, number>();

  async function userByEmail(email: string) {
    const rows = await db
      .select()
      .from(users)
      .where(eq(users.email, normalizeEmail(email)))
      .limit(1);
    return rows[0];
  }

  /**
   * Adds an invitation: a new account of this organization (no password
   * yet), its membership and a setup link, the same whatever the email has
   * elsewhere. Refused only for a person who already set their password in
   * this organization; a pending one gets a fresh link (older ones end).
   * `delivered`: the link is mailed to the address (it proves the email).
   */
  async function addMember(orgId: string, email: string, role: Role, purpose: SetupPurpose, delivered: boolean): Promise<{ userId: string; token: string }> {
    const e = checkEmail(email);
    const t = now();
    return database.write(async (tx) => {
      const org = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, orgId)).limit(1);
      if (!org[0]) throw new NotFound(`No organization ${orgId}.`);
      const mine = (
        await tx
          .select({ userId: users.id, passwordHash: users.passwordHash, role: memberships.role })
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          .where(and(eq(memberships.orgId, orgId), eq(users.email, e)))
          .limit(1)
      )[0];
      if (mine?.passwordHash) throw new InvalidInput({ email: "is already a member of this organization" }, "email is already a member of this organization");
      if (role === "owner") {
        const owner = await tx
          .select()
          .from(memberships)
          .where(and(eq(memberships.orgId, orgId), eq(memberships.role, "owner")))
          .limit(1);
        if (owner[0] && owner[0].userId !== mine?.userId) throw new InvalidInput({ role: "the organization already has an owner" }, "the organization already has an owner");
      }
      const token = newSecret();
      let userId: string;
      if (mine) {
        // Invited again before they set a password: a fresh link (the old one may be lost or expired), the role as now asked (an owner stays owner).
        userId = mine.userId;
        await tx.delete(setupTokens).where(and(eq(setupTokens.orgId, orgId), eq(setupTokens.userId, userId)));
        if (mine.role !== "owner")
          await tx
            .update(memberships)
            .set({ role })
            .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)));
      } else {
        userId = `usr_${randomToken(20)}`;
        await tx.insert(users).values({ id: userId, email: e, passwordHash: null, scopeOrgId: orgId, createdAt: t });
        await tx.insert(memberships).values({ orgId, userId, role, createdAt: t });
      }
      await tx.insert(setupTokens).values({ tokenHash: sha256(token), userId, orgId, purpose, delivered: delivered ? 1 : 0, createdAt: t, expiresAt: t + SETUP_TTL_MS });
      return { userId, token };
    });
  }

  /**
   * Withdraws an invitation nobody used (the mail could not be sent): the
   * membership, its links and the account, only while it has no password
   * (the owner's too, which removeMember never touches).
   */
  async function withdrawInvitation(orgId: string, userId: string): Promise<void> {
    await database.write(async (tx) => {
      const pending = await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.id, userId), eq(users.scopeOrgId, orgId), isNull(users.passwordHash)))
        .limit(1);
      if (!pending[0]) return;
      await tx.delete(setupTokens).where(eq(setupTokens.userId, userId));
      await tx.delete(memberships).where(eq(memberships.userId, userId));
      await tx.delete(users).where(eq(users.id, userId));
    });
  }

  /** The email's accounts that have a password: the proven one first, then the oldest. */
  async function accountsOf(tx: Pick<Db, "select">, email: string) {
    return tx
      .select({ id: users.id, passwordHash: users.passwordHash, scopeOrgId: users.scopeOrgId })
      .from(users)
      .where(and(eq(users.email, normalizeEmail(email)), isNotNull(users.passwordHash)))
      .orderBy(sql`${users.scopeOrgId} IS NOT NULL`, asc(users.createdAt), asc(users.id));
  }

  /** The salt and parameters every account of this email is hashed with (the first one's), or null for an email without one. */
  async function saltOf(tx: Pick<Db, "select">, email: string, except?: string) {
    const first = (await accountsOf(tx, email)).find((a) => a.id !== except);
    return first?.passwordHash ? parsePhc(first.passwordHash) : null;
  }

  /**
   * The setup link's person, if the link is unused and not expired.
   * `joinsAccount`: a mailed link whose email already has a proven account;
   * its holder joins with that account's password instead of choosing one
   * (never computed for a shown link, whose page must not differ).
   */
  async function peekSetup(token: string): Promise<{ userId: string; orgId: string; orgName: string; email: string; purpose: string; delivered: boolean; joinsAccount: boolean } | null> {
    const rows = await db
      .select({ userId: setupTokens.userId, orgId: setupTokens.orgId, orgName: organizations.name, purpose: setupTokens.purpose, delivered: setupTokens.delivered, email: users.email })
      .from(setupTokens)
      .innerJoin(users, eq(users.id, setupTokens.userId))
      .innerJoin(organizations, eq(organizations.id, setupTokens.orgId))
      .where(and(eq(setupTokens.tokenHash, sha256(token)), isNull(setupTokens.usedAt), gt(setupTokens.expiresAt, now()), isNull(users.passwordHash)))
      .limit(1);
    const row = rows[0];
    if (!row) return null;
    const delivered = row.delivered === 1;
    return { ...row, delivered, joinsAccount: delivered && (await provenAccount(db, row.email)) !== undefined };
  }

  async function provenAccount(tx: Pick<Db, "select">, email: string) {
    const rows = await tx
      .select({ id: users.id, passwordHash: users.passwordHash })
      .from(users)
      .where(and(eq(users.email, email), isNull(users.scopeOrgId), isNotNull(users.passwordHash)))
      .limit(1);
    return rows[0];
  }

  function checkPassword(password: string): void {
    if (password.length < MIN_PASSWORD_LENGTH)
      throw new InvalidInput({ password: `must be at least ${MIN_PASSWORD_LENGTH} characters` }, `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    if (password.length > 1024) throw new InvalidInput({ password: "must be at most 1024 characters" }, "password must be at most 1024 characters");
  }

  /**
   * Uses the link once: sets the password and returns who signed in. The
   * updates are conditional (link unused and not expired; the user has no
   * password yet), so two tabs racing on one link cannot both succeed, and no
   * link, however it was made, replaces a password someone already chose. A
   * mailed link makes the account the email's proven one; if the email got a
   * proven account meanwhile, nothing is used and the answer is `join` (the
   * page asks for that account's password instead).
   */
  async function completeSetup(token: string, password: string): Promise<{ userId: string; orgId: string } | "join" | null> {
    checkPassword(password);
    const found = await peekSetup(token);
    if (!found) return null;
    if (found.joinsAccount) return "join";
    for (let attempt = 0; attempt < 3; attempt++) {
      // Hashed outside the write (it takes a while); the email's salt is checked again inside it.
      const salt = await saltOf(db, found.email, found.userId);
      const passwordHash = await hashLike(password, salt);
      const done = await database.write(async (tx) => {
        const now2 = await saltOf(tx, found.email, found.userId);
        if ((now2 === null) !== (salt === null) || (now2 && salt && !sameSalt(now2, salt))) return "again" as const;
        if (found.delivered && (await provenAccount(tx, found.email))) return "join" as const;
        const t = now();
        const used = await tx
          .update(setupTokens)
          .set({ usedAt: t })
          .where(and(eq(setupTokens.tokenHash, sha256(token)), isNull(setupTokens.usedAt), gt(setupTokens.expiresAt, t)))
          .returning({ userId: setupTokens.userId, orgId: setupTokens.orgId, delivered: setupTokens.delivered });
        const row = used[0];
        if (!row) return null;
        const member = await tx
          .select()
          .from(memberships)
          .where(and(eq(memberships.orgId, row.orgId), eq(memberships.userId, row.userId)))
          .limit(1);
        if (!member[0]) return null;
        const set = await tx
          .update(users)
          .set(row.delivered === 1 ? { passwordHash, scopeOrgId: null } : { passwordHash })
          .where(and(eq(users.id, row.userId), isNull(users.passwordHash)))
          .returning({ id: users.id });
        return set[0] ? { userId: row.userId, orgId: row.orgId } : null;
      });
      if (done !== "again") return done;
    }
    return null;
  }

  /**
   * A mailed invitation for an email that has a proven account: its holder
   * (the password of that account, and the link that reached the mailbox)
   * joins the organization with that account, keeping the invited role; the
   * placeholder account made by the invitation goes. Null for a wrong
   * password or a link no longer valid.
   */
  async function acceptInvitation(token: string, password: string): Promise<{ userId: string; orgId: string } | null> {
    const found = await peekSetup(token);
    if (!found?.joinsAccount) return null;
    const proven = await provenAccount(db, found.email);
    const phc = proven?.passwordHash ? parsePhc(proven.passwordHash) : null;
    const ok = phc ? tagEquals(await tagLike(password, phc), phc.tag) : await Bun.password.verify(password, proven?.passwordHash ?? (await getDummyHash())).catch(() => false);
    if (!proven || !ok) return null;
    return database.write(async (tx) => {
      const t = now();
      const used = await tx
        .update(setupTokens)
        .set({ usedAt: t })
        .where(and(eq(setupTokens.tokenHash, sha256(token)), isNull(setupTokens.usedAt), gt(setupTokens.expiresAt, t), eq(setupTokens.delivered, 1)))
        .returning({ userId: setupTokens.userId, orgId: setupTokens.orgId });
      const row = used[0];
      if (!row) return null;
      const invited = (
        await tx
          .select()
          .from(memberships)
          .where(and(eq(memberships.orgId, row.orgId), eq(memberships.userId, row.userId)))
          .limit(1)
      )[0];
      if (!invited) return null;
      const already = await tx
        .select()
        .from(memberships)
        .where(and(eq(memberships.orgId, row.orgId), eq(memberships.userId, proven.id)))
        .limit(1);
      if (!already[0]) await tx.insert(memberships).values({ orgId: row.orgId, userId: proven.id, role: invited.role, createdAt: invited.createdAt });
      await tx.delete(memberships).where(eq(memberships.userId, row.userId));
      await tx.delete(setupTokens).where(eq(setupTokens.userId, row.userId));
      await tx.delete(users).where(and(eq(users.id, row.userId), isNull(users.passwordHash), ne(users.id, proven.id)));
      return { userId: proven.id, orgId: row.orgId };
    });
  }

  /**
   * The person and organization an email + password sign in to, or null
   * (unknown email, no password yet, wrong password alike). One argon2id
   * computation whatever the email has: its accounts share a salt
   * (password-hash.ts). The matching account: the proven one (its oldest
   * membership) before those of one organization, oldest first.
   */
  async function verifyLogin(email: string, password: string): Promise<{ userId: string; orgId: string } | null> {
    const accounts = await accountsOf(db, email);
    const first = accounts[0]?.passwordHash ? parsePhc(accounts[0].passwordHash) : null;
    if (!first) {
      // Unknown email (or a hash this code did not write): one verification all the same.
      const hash = accounts[0]?.passwordHash ?? (await getDummyHash());
      const ok = await Bun.password.verify(password, hash).catch(() => false);
      return ok && accounts[0] ? membershipOf(accounts[0]) : null;
    }
    const tag = await tagLike(password, first);
    for (const a of accounts) {
      const phc = parsePhc(a.passwordHash ?? "");
      if (phc && sameSalt(phc, first) && tagEquals(tag, phc.tag)) {
        const who = await membershipOf(a);
        if (who) return who;
      }
    }
    return null;
  }

  async function membershipOf(a: { id: string; scopeOrgId: string | null }): Promise<{ userId: string; orgId: string } | null> {
    const m = await db
      .select()
      .from(memberships)
      .where(a.scopeOrgId === null ? eq(memberships.userId, a.id) : and(eq(memberships.userId, a.id), eq(memberships.orgId, a.scopeOrgId)))
      .orderBy(asc(memberships.createdAt))
      .limit(1);
    return m[0] ? { userId: a.id, orgId: m[0].orgId } : null;
  }

  async function createSession(userId: string, orgId: string): Promise<SessionIssued> {
    const token = newSecret();
    const csrfToken = randomToken(43);
    const t = now();
    const expiresAt = t + SESSION_IDLE_MS;
    await database.write((tx) => tx.insert(sessions).values({ idHash: sha256(token), userId, orgId, csrfToken, createdAt: t, lastSeenAt: t, expiresAt }));
    return { token, csrfToken, expiresAt };
  }

  /** The signed-in member for a session cookie, or null (unknown, expired, membership gone). */
  async function sessionMember(token: string): Promise<Member | null> {
    if (!token || token.length > 200) return null;
    const idHash = sha256(token);
    const t = now();
    const rows = await db
      .select({
        userId: sessions.userId,
        csrfToken: sessions.csrfToken,
        createdAt: sessions.createdAt,
        expiresAt: sessions.expiresAt,
        email: users.email,
        role: memberships.role,
        orgId: organizations.id,
        orgName: organizations.name,
        settings: organizations.settings,
        orgCreatedAt: organizations.createdAt,
      })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .innerJoin(memberships, and(eq(memberships.userId, sessions.userId), eq(memberships.orgId, sessions.orgId)))
      .innerJoin(organizations, eq(organizations.id, sessions.orgId))
      .where(and(eq(sessions.idHash, idHash), gt(sessions.expiresAt, t)))
      .limit(1);
    const r = rows[0];
    if (!r) return null;
    if ((touched.get(idHash) ?? 0) + TOUCH_EVERY_MS <= t) {
      touched.set(idHash, t);
      if (touched.size > 10_000) touched.clear();
      // Sliding idle expiry, capped by the absolute one; fire-and-forget, a failed touch only shortens the session.
      const expiresAt = Math.min(t + SESSION_IDLE_MS, r.createdAt + SESSION_MAX_MS);
      database.write((tx) => tx.update(sessions).set({ lastSeenAt: t, expiresAt }).where(eq(sessions.idHash, idHash))).catch(() => {});
    }
    return {
      userId: r.userId,
      email: r.email,
      role: r.role as Role,
      organizations: await organizationsOf(r.userId),
      csrfToken: r.csrfToken,
      org: { id: r.orgId, name: r.orgName, settings: normalizeSettings(r.settings), createdAt: r.orgCreatedAt },
    };
  }

  /** The organizations a person belongs to, oldest membership first (the switcher's choices). */
  async function organizationsOf(userId: string): Promise<Array<{ id: string; name: string; role: Role }>> {
    const rows = await db
      .select({ id: organizations.id, name: organizations.name, role: memberships.role })
      .from(memberships)
      .innerJoin(organizations, eq(organizations.id, memberships.orgId))
      .where(eq(memberships.userId, userId))
      .orderBy(asc(memberships.createdAt));
    return rows.map((r) => ({ id: r.id, name: r.name, role: r.role as Role }));
  }

  /**
   * Points the session at another organization, only if the session's person
   * is a member of it (checked here, in the write, not from the form).
   */
  async function switchOrganization(token: string, orgId: string): Promise<boolean> {
    const idHash = sha256(token);
    return database.write(async (tx) => {
      const s = (
        await tx
          .select({ userId: sessions.userId })
          .from(sessions)
          .where(and(eq(sessions.idHash, idHash), gt(sessions.expiresAt, now())))
          .limit(1)
      )[0];
      if (!s) return false;
      const m = await tx
        .select()
        .from(memberships)
        .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, s.userId)))
        .limit(1);
      if (!m[0]) return false;
      await tx.update(sessions).set({ orgId }).where(eq(sessions.idHash, idHash));
      return true;
    });
  }

  async function deleteSession(token: string): Promise<void> {
    const idHash = sha256(token);
    touched.delete(idHash);
    await database.write((tx) => tx.delete(sessions).where(eq(sessions.idHash, idHash)));
  }

  async function listMembers(orgId: string): Promise<MemberRow[]> {
    const rows = await db
      .select({ userId: users.id, email: users.email, role: memberships.role, createdAt: memberships.createdAt, passwordHash: users.passwordHash })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.orgId, orgId))
      .orderBy(asc(memberships.createdAt));
    return rows.map((r) => ({ userId: r.userId, email: r.email, role: r.role as Role, createdAt: r.createdAt, active: r.passwordHash !== null }));
  }

  /**
   * Removes a member (never the owner): their membership, their sessions and
   * unused links in this organization; the user too once they belong nowhere.
   */
  async function removeMember(orgId: string, userId: string): Promise<boolean> {
    return database.write(async (tx) => {
      const m = await tx
        .select()
        .from(memberships)
        .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
        .limit(1);
      if (!m[0] || m[0].role === "owner") return false;
      await tx.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)));
      await tx.delete(sessions).where(and(eq(sessions.orgId, orgId), eq(sessions.userId, userId)));
      await tx.delete(setupTokens).where(and(eq(setupTokens.orgId, orgId), eq(setupTokens.userId, userId)));
      const left = await tx.select({ o: memberships.orgId }).from(memberships).where(eq(memberships.userId, userId)).limit(1);
      if (!left[0]) await tx.delete(users).where(eq(users.id, userId));
      return true;
    });
  }

  /** Deletes expired sessions and setup links (retention does the same in batches; tests and the CLI use this). */
  async function deleteExpired(): Promise<{ sessions: number; setupTokens: number }> {
    const t = now();
    return database.write(async (tx) => {
      const s = await tx.delete(sessions).where(lt(sessions.expiresAt, t)).returning({ k: sessions.idHash });
      const k = await tx.delete(setupTokens).where(lt(setupTokens.expiresAt, t)).returning({ k: setupTokens.tokenHash });
      return { sessions: s.length, setupTokens: k.length };
    });
  }

  return {
    /** The owner of a new organization and their setup link (`cli org create --owner-email`). */
    createOwner: (orgId: string, email: string, opts: { delivered?: boolean } = {}) => addMember(orgId, email, "owner", "owner_setup", opts.delivered === true),
    /** An invitation (`cli org invite`, the Members section); `delivered`: the caller mails the link to the address. */
    async invite(orgId: string, email: string, role: string, opts: { delivered?: boolean } = {}) {
      if (!(INVITABLE_ROLES as readonly string[]).includes(role)) throw new InvalidInput({ role: `must be one of ${INVITABLE_ROLES.join(", ")}` }, `role must be one of ${INVITABLE_ROLES.join(", ")}`);
      return addMember(orgId, email, role as Role, "invite", opts.delivered === true);
    },
    withdrawInvitation,
    peekSetup,
    completeSetup,
    acceptInvitation,
    organizationsOf,
    switchOrganization,
    verifyLogin,
    createSession,
    sessionMember,
    deleteSession,
    listMembers,
    removeMember,
    deleteExpired,
  };
}

export type PeopleStore = ReturnType<typeof createPeopleStore>;

/** The setup page of a token, as printed by the CLI and shown on the Members section. */
export function setupUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/settings/setup/${token}`;
}
