import { and, asc, eq, gt, isNull, lt } from "drizzle-orm";
import type { Database, Db } from "../db/create-database.ts";
import { memberships, organizations, sessions, setupTokens, users } from "../db/schema/index.ts";
import { InvalidInput, NotFound } from "../errors.ts";
import { randomToken } from "../ids.ts";
import { normalizeSettings } from "../orgs/org-settings.ts";
import type { Member, Role } from "./types.ts";

/**
 * People of the settings screen (issue 13): users, their memberships, the
 * one-time setup links, and sessions. Every secret that reaches a browser or a
 * terminal (setup token, session token) is stored as its SHA-256 only, so a
 * copy of the database signs nobody in. Used by the screen and by the CLI
 * (`org create --owner-email`, `org invite`), on the same rows.
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
   * Who an email is, for adding them to an organization: a new person (gets a
   * setup link), a person with a password (joins at once, no link: a link
   * could set that password, and the inviter sees it), or refused: a person
   * without a password yet who belongs to another organization (their one
   * pending link is the only one; a second organization's link would let its
   * owner choose the password and enter the first organization).
   */
  async function classify(tx: Pick<Db, "select">, orgId: string, e: string) {
    const user = (await tx.select().from(users).where(eq(users.email, e)).limit(1))[0];
    if (!user) return { user: undefined, hasPassword: false };
    const mine = await tx
      .select()
      .from(memberships)
      .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, user.id)))
      .limit(1);
    if (mine[0]) throw new InvalidInput({ email: "is already a member of this organization" }, "email is already a member of this organization");
    if (user.passwordHash === null)
      throw new InvalidInput(
        { email: "has a pending invitation to another organization; add them once they have set their password" },
        "email has a pending invitation to another organization; add them once they have set their password",
      );
    return { user, hasPassword: true };
  }

  /**
   * Adds the membership: for a new email also the user and a setup link; for
   * a person who already has a password no link at all (`token: null`, they
   * sign in with their password and switch organization).
   */
  async function addMember(orgId: string, email: string, role: Role, purpose: SetupPurpose): Promise<{ userId: string; token: string | null; existingAccount: boolean }> {
    const e = checkEmail(email);
    const t = now();
    return database.write(async (tx) => {
      const org = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, orgId)).limit(1);
      if (!org[0]) throw new NotFound(`No organization ${orgId}.`);
      const found = await classify(tx, orgId, e);
      if (role === "owner") {
        const owner = await tx
          .select()
          .from(memberships)
          .where(and(eq(memberships.orgId, orgId), eq(memberships.role, "owner")))
          .limit(1);
        if (owner[0]) throw new InvalidInput({ role: "the organization already has an owner" }, "the organization already has an owner");
      }
      if (found.user) {
        await tx.insert(memberships).values({ orgId, userId: found.user.id, role, createdAt: t });
        return { userId: found.user.id, token: null, existingAccount: true };
      }
      const user = { id: `usr_${randomToken(20)}`, email: e, passwordHash: null, createdAt: t };
      await tx.insert(users).values(user);
      await tx.insert(memberships).values({ orgId, userId: user.id, role, createdAt: t });
      const token = newSecret();
      await tx.insert(setupTokens).values({ tokenHash: sha256(token), userId: user.id, orgId, purpose, createdAt: t, expiresAt: t + SETUP_TTL_MS });
      return { userId: user.id, token, existingAccount: false };
    });
  }

  /** The refusal addMember would give for this email in a new organization, checked before the CLI creates one. */
  async function checkNewOwner(email: string): Promise<void> {
    const e = checkEmail(email);
    await classify(db, "", e);
  }

  /** The setup link's person, if the link is unused and not expired. */
  async function peekSetup(token: string): Promise<{ userId: string; orgId: string; email: string; purpose: string } | null> {
    const rows = await db
      .select({ userId: setupTokens.userId, orgId: setupTokens.orgId, purpose: setupTokens.purpose, email: users.email })
      .from(setupTokens)
      .innerJoin(users, eq(users.id, setupTokens.userId))
      .where(and(eq(setupTokens.tokenHash, sha256(token)), isNull(setupTokens.usedAt), gt(setupTokens.expiresAt, now()), isNull(users.passwordHash)))
      .limit(1);
    return rows[0] ?? null;
  }

  async function hashPassword(password: string): Promise<string> {
    if (password.length < MIN_PASSWORD_LENGTH)
      throw new InvalidInput({ password: `must be at least ${MIN_PASSWORD_LENGTH} characters` }, `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    if (password.length > 1024) throw new InvalidInput({ password: "must be at most 1024 characters" }, "password must be at most 1024 characters");
    return Bun.password.hash(password, "argon2id");
  }

  /**
   * Uses the link once: sets the password and returns who signed in. The
   * updates are conditional (link unused and not expired; the user has no
   * password yet), so two tabs racing on one link cannot both succeed, and no
   * link, however it was made, replaces a password someone already chose.
   */
  async function completeSetup(token: string, password: string): Promise<{ userId: string; orgId: string } | null> {
    const passwordHash = await hashPassword(password);
    return database.write(async (tx) => {
      const t = now();
      const used = await tx
        .update(setupTokens)
        .set({ usedAt: t })
        .where(and(eq(setupTokens.tokenHash, sha256(token)), isNull(setupTokens.usedAt), gt(setupTokens.expiresAt, t)))
        .returning({ userId: setupTokens.userId, orgId: setupTokens.orgId });
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
        .set({ passwordHash })
        .where(and(eq(users.id, row.userId), isNull(users.passwordHash)))
        .returning({ id: users.id });
      return set[0] ? row : null;
    });
  }

  /**
   * The person and organization an email + password sign in to, or null
   * (unknown email, no password yet, wrong password alike). With several
   * memberships, the oldest one.
   */
  async function verifyLogin(email: string, password: string): Promise<{ userId: string; orgId: string } | null> {
    const user = await userByEmail(email);
    const hash = user?.passwordHash ?? (await getDummyHash());
    const ok = await Bun.password.verify(password, hash).catch(() => false);
    if (!user?.passwordHash || !ok) return null;
    const m = await db.select().from(memberships).where(eq(memberships.userId, user.id)).orderBy(asc(memberships.createdAt)).limit(1);
    return m[0] ? { userId: user.id, orgId: m[0].orgId } : null;
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
    createOwner: (orgId: string, email: string) => addMember(orgId, email, "owner", "owner_setup"),
    /** An invitation (`cli org invite`, the Members section). */
    async invite(orgId: string, email: string, role: string) {
      if (!(INVITABLE_ROLES as readonly string[]).includes(role)) throw new InvalidInput({ role: `must be one of ${INVITABLE_ROLES.join(", ")}` }, `role must be one of ${INVITABLE_ROLES.join(", ")}`);
      return addMember(orgId, email, role as Role, "invite");
    },
    checkNewOwner,
    peekSetup,
    completeSetup,
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
