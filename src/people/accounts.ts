import { and, asc, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/create-database.ts";
import { memberships, users } from "../db/schema/index.ts";
import { randomToken } from "../ids.ts";
import { parsePhc, sameSalt, tagEquals, tagLike } from "./password-hash.ts";
import { normalizeEmail, type PeopleContext } from "./people-rules.ts";

/**
 * Accounts and their passwords: the accounts of an email, their shared salt
 * (password-hash.ts), the email's proven account, and sign-in. Every check
 * costs one argon2id computation whatever the email has.
 */

/** A hash to verify against when the email is unknown, so both cases cost one argon2 verification. */
let dummyHash: Promise<string> | undefined;
const getDummyHash = () => {
  dummyHash ??= Bun.password.hash(randomToken(32), "argon2id");
  return dummyHash;
};

type Reader = Pick<Db, "select">;

/** The email's accounts that have a password: the proven one first, then the oldest. */
export async function accountsOf(tx: Reader, email: string) {
  return tx
    .select({ id: users.id, passwordHash: users.passwordHash, scopeOrgId: users.scopeOrgId })
    .from(users)
    .where(and(eq(users.email, normalizeEmail(email)), isNotNull(users.passwordHash)))
    .orderBy(sql`${users.scopeOrgId} IS NOT NULL`, asc(users.createdAt), asc(users.id));
}

/** The salt and parameters every account of this email is hashed with (the first one's), or null for an email without one. */
export async function saltOf(tx: Reader, email: string, except?: string) {
  const first = (await accountsOf(tx, email)).find((a) => a.id !== except);
  return first?.passwordHash ? parsePhc(first.passwordHash) : null;
}

/** The email's proven account (a mailed link set its password), if any. */
export async function provenAccount(tx: Reader, email: string) {
  const rows = await tx
    .select({ id: users.id, passwordHash: users.passwordHash })
    .from(users)
    .where(and(eq(users.email, email), isNull(users.scopeOrgId), isNotNull(users.passwordHash)))
    .limit(1);
  return rows[0];
}

/** Whether `password` is this account's (one argon2 computation; a missing account verifies against a dummy hash). */
export async function passwordMatches(account: { passwordHash: string | null } | undefined, password: string): Promise<boolean> {
  const phc = account?.passwordHash ? parsePhc(account.passwordHash) : null;
  const ok = phc ? tagEquals(await tagLike(password, phc), phc.tag) : await Bun.password.verify(password, account?.passwordHash ?? (await getDummyHash())).catch(() => false);
  return account !== undefined && ok;
}

export function createSignIn({ db }: Pick<PeopleContext, "db">) {
  async function membershipOf(a: { id: string; scopeOrgId: string | null }): Promise<{ userId: string; orgId: string } | null> {
    const m = await db
      .select()
      .from(memberships)
      .where(a.scopeOrgId === null ? eq(memberships.userId, a.id) : and(eq(memberships.userId, a.id), eq(memberships.orgId, a.scopeOrgId)))
      .orderBy(asc(memberships.createdAt))
      .limit(1);
    return m[0] ? { userId: a.id, orgId: m[0].orgId } : null;
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

  return { verifyLogin };
}
