/**
 * Rows and files for the retention tests: a real database file in a
 * temporary DATA_DIR, and inserts of each table's rows at chosen ages.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type Config, loadConfig } from "../config.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { createOutbox } from "../outbox/outbox.ts";
import { actors, actorTags, broadcasts, playbackAccess, rateLimits, streamKeys, uploads, webhookAttempts, webhookDeliveries, webhookEndpoints, work } from "../db/schema/index.ts";
import { newId } from "../ids.ts";

export const DAY = 86_400_000;
export const ORG = "org_retention";

export interface Fixture {
  dir: string;
  config: Config;
  database: Database;
  close(): void;
}

export async function openFixture(env: Record<string, string> = {}): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), "retention-"));
  const config = loadConfig({ DATA_DIR: dir, BASE_URL: "https://video.example.com", ...env });
  const database = await createDatabase({ url: config.databaseUrl });
  return {
    dir,
    config,
    database,
    async close() {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A file (and its folders) last modified `ageMs` before `now`. */
export function fileAt(path: string, now: number, ageMs: number, content = "x"): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  const t = (now - ageMs) / 1000;
  utimesSync(path, t, t);
  return path;
}

/** A folder with one file in it, both last modified `ageMs` before `now`. */
export function dirAt(path: string, now: number, ageMs: number): string {
  fileAt(join(path, "source.bin"), now, ageMs);
  const t = (now - ageMs) / 1000;
  utimesSync(path, t, t);
  return path;
}

export function rows(database: Database) {
  const write = database.write.bind(database);
  return {
    async outbox(o: { createdAt: number; fannedOutAt: number | null }): Promise<number> {
      const outbox = createOutbox({ database });
      return database.write(async (tx) => {
        const [row] = await outbox.append(tx, [{ orgId: ORG, entityId: "vid_x", event: "VIDEO_UPLOADED", data: {} }], o.createdAt);
        if (o.fannedOutAt !== null) await outbox.markFannedOut(tx, [row!.seq], o.fannedOutAt);
        return row!.seq;
      });
    },

    async endpoint(o: { deletedAt: number | null; createdAt?: number }): Promise<string> {
      const id = newId("whk");
      await write((tx) =>
        tx
          .insert(webhookEndpoints)
          .values({ id, orgId: ORG, url: "https://hooks.example.com/x", events: [], fields: [], description: null, sealedSecret: "sealed", createdAt: o.createdAt ?? 0, deletedAt: o.deletedAt }),
      );
      return id;
    },

    /** A delivery and `attempts` attempt rows. */
    async delivery(o: { endpointId?: string; status: string; createdAt: number; attempts?: number }): Promise<string> {
      const id = newId("dlv");
      await write(async (tx) => {
        await tx.insert(webhookDeliveries).values({
          id,
          endpointId: o.endpointId ?? "whk_x",
          orgId: ORG,
          eventId: newId("evt"),
          event: "VIDEO_UPLOADED",
          body: "{}",
          test: false,
          status: o.status,
          attempts: o.attempts ?? 0,
          nextAttemptAt: o.status === "pending" ? o.createdAt : null,
          createdAt: o.createdAt,
          updatedAt: o.createdAt,
        });
        for (let i = 0; i < (o.attempts ?? 0); i++) {
          await tx.insert(webhookAttempts).values({ deliveryId: id, startedAt: o.createdAt, durationMs: 5, statusCode: 204, error: null, manual: false });
        }
      });
      return id;
    },

    async work(o: { status: string; finishedAt: number | null; type?: string; entityId?: string; payload?: object; createdAt?: number }): Promise<string> {
      const id = newId("wrk");
      const t = o.createdAt ?? 0;
      await write((tx) =>
        tx.insert(work).values({
          id,
          type: o.type ?? "actor-timer",
          orgId: ORG,
          entityId: o.entityId ?? "vid_x",
          payload: o.payload ?? {},
          status: o.status,
          attempts: 1,
          maxAttempts: 3,
          runAfter: t,
          createdAt: t,
          updatedAt: t,
          finishedAt: o.finishedAt,
        }),
      );
      return id;
    },

    async upload(o: { status: string; expiresAt: number }): Promise<string> {
      const id = newId("upl");
      await write((tx) => tx.insert(uploads).values({ id, orgId: ORG, status: o.status, expiresAt: o.expiresAt, maxBytes: 100, createdAt: o.expiresAt - 3_600_000 }));
      return id;
    },

    async actor(o: { kind: "video" | "livestream"; status: string; deletedAt: number | null; dedupeKey?: string | null; id?: string; tags?: string[] }): Promise<string> {
      const id = o.id ?? newId(o.kind === "video" ? "vid" : "ls");
      await write(async (tx) => {
        await tx.insert(actors).values({ id, kind: o.kind, orgId: ORG, status: o.status, state: {}, dedupeKey: o.dedupeKey ?? null, version: 1, createdAt: 0, updatedAt: 0, deletedAt: o.deletedAt });
        for (const tag of o.tags ?? []) await tx.insert(actorTags).values({ kind: o.kind, tag, orgId: ORG, actorId: id });
      });
      return id;
    },

    async streamKey(streamId: string): Promise<void> {
      await write((tx) => tx.insert(streamKeys).values({ digest: newId("key"), streamId, orgId: ORG, createdAt: 0 }));
    },

    /** A signed asset's playback rules row (src/playback/playback-access.ts), keyed by a media token. */
    async playbackAccess(assetId: string): Promise<string> {
      const token = crypto.randomUUID().replaceAll("-", "").padEnd(40, "0");
      await write((tx) => tx.insert(playbackAccess).values({ token, assetId, orgId: ORG, policy: "signed", restrictionId: null, createdAt: 0 }));
      return token;
    },

    async broadcast(streamId: string): Promise<void> {
      await write((tx) => tx.insert(broadcasts).values({ streamId, orgId: ORG, claimedBy: "p1", leaseUntil: Date.now() + 60_000, startedAt: 0, leftAt: null }));
    },

    async rateLimit(key: string, windowStart: number): Promise<void> {
      await write((tx) => tx.insert(rateLimits).values({ key, windowStart, count: 1 }));
    },
  };
}
