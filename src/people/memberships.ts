import { and, asc, eq, isNull } from "drizzle-orm";
import { memberships, organizations, sessions, setupTokens, users } from "../db/schema/index.ts";
import { InvalidInput, NotFound } from "../errors.ts";
import { randomToken } from "../ids.ts";
import { checkEmail, INVITABLE_ROLES, newSecret, type PeopleContext, SETUP_TTL_MS, sha256 } from "./people-rules.ts";
import type { MemberRow, Role, SetupPurpose } from "./types.ts";

/**
 * Memberships: who belongs to an organization with which role, invitations
 * (a new account of the inviting organization and its setup link), and
 * removal. Accounts (issue 23, docs/decisions.md "Accounts"): an invitation
 * always makes an account of the inviting organization (`scope_org_id`),
 * whatever the email has elsewhere, so the inviter's answer never depends on it.
 */
export function createMemberships({ database, db, now }: PeopleContext) {
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

  return {
    /** The owner of a new organization and their setup link (`cli org create --owner-email`). */
    createOwner: (orgId: string, email: string, opts: { delivered?: boolean } = {}) => addMember(orgId, email, "owner", "owner_setup", opts.delivered === true),
    /** An invitation (`cli org invite`, the Members section); `delivered`: the caller mails the link to the address. */
    async invite(orgId: string, email: string, role: string, opts: { delivered?: boolean } = {}) {
      if (!(INVITABLE_ROLES as readonly string[]).includes(role)) throw new InvalidInput({ role: `must be one of ${INVITABLE_ROLES.join(", ")}` }, `role must be one of ${INVITABLE_ROLES.join(", ")}`);
      return addMember(orgId, email, role as Role, "invite", opts.delivered === true);
    },
    withdrawInvitation,
    organizationsOf,
    listMembers,
    removeMember,
  };
}
