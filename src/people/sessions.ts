import { and, eq, gt, lt } from "drizzle-orm";
import { memberships, organizations, sessions, setupTokens, users } from "../db/schema/index.ts";
import { randomToken } from "../ids.ts";
import { normalizeSettings } from "../orgs/org-settings.ts";
import { newSecret, type PeopleContext, SESSION_IDLE_MS, SESSION_MAX_MS, sha256 } from "./people-rules.ts";
import type { Member, Role, SessionIssued } from "./types.ts";

/** last_seen_at (and with it expires_at) is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;

/**
 * Sessions of the settings screen: issued at sign-in, stored as the cookie's
 * SHA-256, sliding idle expiry capped by an absolute one, pointed at one of
 * the person's organizations at a time.
 */
export function createSessions({ database, db, now }: PeopleContext, deps: { organizationsOf: (userId: string) => Promise<Member["organizations"]> }) {
  /** Last last_seen_at write per session hash (in memory; a restart only costs one extra write). */
  const touched = new Map<string, number>();

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
      organizations: await deps.organizationsOf(r.userId),
      csrfToken: r.csrfToken,
      org: { id: r.orgId, name: r.orgName, settings: normalizeSettings(r.settings), createdAt: r.orgCreatedAt },
    };
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

  /** Deletes expired sessions and setup links (retention does the same in batches; tests and the CLI use this). */
  async function deleteExpired(): Promise<{ sessions: number; setupTokens: number }> {
    const t = now();
    return database.write(async (tx) => {
      const s = await tx.delete(sessions).where(lt(sessions.expiresAt, t)).returning({ k: sessions.idHash });
      const k = await tx.delete(setupTokens).where(lt(setupTokens.expiresAt, t)).returning({ k: setupTokens.tokenHash });
      return { sessions: s.length, setupTokens: k.length };
    });
  }

  return { createSession, sessionMember, switchOrganization, deleteSession, deleteExpired };
}
