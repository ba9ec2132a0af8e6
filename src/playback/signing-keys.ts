import { generateKeyPair } from "node:crypto";
import { promisify } from "node:util";
import { and, count, desc, eq } from "drizzle-orm";
import { importSPKI } from "jose";
import type { Database } from "../db/create-database.ts";
import { signingKeys } from "../db/schema/index.ts";
import { newId } from "../ids.ts";
import { MAX_SIGNING_KEYS, NotFound, SigningKeyLimit } from "./errors.ts";

export interface SigningKeyRow {
  id: string;
  orgId: string;
  publicKey: string;
  createdAt: number;
}

export const signingKeyView = (row: SigningKeyRow) => ({ id: row.id, created_at: new Date(row.createdAt).toISOString() });

/**
 * RS256 signing keys (table `signing_keys`). The pair is made here, the
 * private half (PKCS#8 PEM, base64 as Mux hands it out) is answered once and
 * forgotten; only the public half (SPKI PEM) is stored. Imported public keys
 * are kept per id: a key's PEM never changes, and a deleted key is no longer
 * found by `verifierOf` (its row read goes through the read cache, emptied by
 * any commit of any process).
 */
export function createSigningKeys(database: Database) {
  const imported = new Map<string, Promise<CryptoKey>>();

  async function readRow(id: string): Promise<SigningKeyRow | null> {
    const [row] = await database.db.select().from(signingKeys).where(eq(signingKeys.id, id)).limit(1);
    return row ?? null;
  }

  return {
    async create(orgId: string): Promise<{ row: SigningKeyRow; privateKey: string }> {
      // Off the event loop: an RSA 2048 pair takes tens to hundreds of milliseconds.
      const { publicKey, privateKey } = await promisify(generateKeyPair)("rsa", {
        modulusLength: 2048,
        publicKeyEncoding: { type: "spki", format: "pem" },
        privateKeyEncoding: { type: "pkcs8", format: "pem" },
      });
      const row: SigningKeyRow = { id: newId("sk"), orgId, publicKey, createdAt: Date.now() };
      await database.write(async (tx) => {
        const [n] = await tx.select({ n: count() }).from(signingKeys).where(eq(signingKeys.orgId, orgId));
        if ((n?.n ?? 0) >= MAX_SIGNING_KEYS) throw new SigningKeyLimit();
        await tx.insert(signingKeys).values(row);
      });
      return { row, privateKey: Buffer.from(privateKey).toString("base64") };
    },

    list: (orgId: string): Promise<SigningKeyRow[]> => database.db.select().from(signingKeys).where(eq(signingKeys.orgId, orgId)).orderBy(desc(signingKeys.createdAt), desc(signingKeys.id)),

    async remove(orgId: string, id: string): Promise<void> {
      const gone = await database.write((tx) =>
        tx
          .delete(signingKeys)
          .where(and(eq(signingKeys.id, id), eq(signingKeys.orgId, orgId)))
          .returning({ id: signingKeys.id }),
      );
      if (gone.length === 0) throw new NotFound();
      imported.delete(id);
    },

    /** The public key of `kid` if it belongs to `orgId`; null for an unknown key or another organization's. */
    async verifierOf(kid: string, orgId: string): Promise<CryptoKey | null> {
      if (kid.length > 64) return null;
      const row = await database.cache.read(`signing-key:${kid}`, () => readRow(kid));
      if (!row || row.orgId !== orgId) return null;
      let key = imported.get(kid);
      if (!key) {
        key = importSPKI(row.publicKey, "RS256");
        imported.set(kid, key);
      }
      return key;
    },
  };
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;
