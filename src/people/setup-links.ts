import { and, eq, gt, isNull, ne } from "drizzle-orm";
import { memberships, organizations, setupTokens, users } from "../db/schema/index.ts";
import { hashLike, sameSalt } from "./password-hash.ts";
import { passwordMatches, provenAccount, saltOf } from "./accounts.ts";
import { checkPassword, type PeopleContext, sha256 } from "./people-rules.ts";

/**
 * One-time setup links: what a link shows, setting the password with it,
 * and a mailed invitation accepted with an existing proven account. A link
 * shown to the inviter sets the password of an account of that organization
 * only; a link mailed to the address (SMTP_URL, `delivered`) proves the email.
 * No organization ever gains a member whose password was set by someone
 * outside it.
 */
export function createSetupLinks({ database, db, now }: PeopleContext) {
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
    const ok = await passwordMatches(proven, password);
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

  return { peekSetup, completeSetup, acceptInvitation };
}
