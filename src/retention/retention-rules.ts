import type { ResultSet } from "@libsql/client";
import { and, eq, inArray, isNotNull, lt, not, sql } from "drizzle-orm";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type { Config } from "../config.ts";
import type { Schema } from "../db/create-database.ts";
import { prune as pruneOutbox } from "../outbox/outbox.ts";
import { actors, actorTags, drmKeys, playbackAccess, rateLimits, sessions, setupTokens, streamKeys, uploads, webhookAttempts, webhookDeliveries, webhookEndpoints, work } from "../db/schema/index.ts";

/** The reader, the writer's transaction: whichever runs the statements. */
export type Q = BaseSQLiteDatabase<"async", ResultSet, Schema>;

/** A statement not yet run: awaited to run it, `toSQL()` to explain it (retention-indexes.test.ts). */
export interface Statement<T> extends PromiseLike<T> {
  toSQL(): { sql: string; params: unknown[] };
}

/** What one batch of a rule found: the key it deletes by, plus what its files need. */
export interface Candidate {
  key: string | number;
  orgId?: string;
  kind?: string;
  status?: string;
}

/** Every table and folder a sweep reports on, with how many rows or files it deleted. */
export const RETENTION_TARGETS = [
  "outbox",
  "webhook_deliveries",
  "webhook_attempts",
  "webhook_endpoints",
  "work",
  "uploads",
  "upload_files",
  "actors",
  "actor_tags",
  "stream_key_digests",
  "drm_keys",
  // Issue 27: a signed or restricted asset's rules (src/playback/playback-access.ts), with its actor.
  "playback_access",
  "video_dirs",
  "rate_limits",
  "recordings",
  "work_dirs",
  "tus_files",
  "sessions",
  "setup_tokens",
  // Issue 28 (src/analytics/analytics-retention.ts).
  "analytics_event_batches",
  "analytics_whep_samples",
  "analytics_views",
  "analytics_rollups",
] as const;
export type RetentionTarget = (typeof RETENTION_TARGETS)[number];
export type RetentionReport = Record<RetentionTarget, number>;

/**
 * One class of rows that outlives its use: which are past their period
 * (an index range, at most `limit` of them) and the deletes of a batch.
 * Each delete repeats the rule's condition, so a row that changed between
 * the read and the write (a rate-limit key hit again) is kept.
 */
export interface RetentionRule {
  /** The table it deletes from (its report key). */
  table: RetentionTarget;
  /** Rows older than this (epoch ms) are past their period. */
  cutoff(now: number): number;
  candidates(q: Q, cutoff: number, limit: number): Statement<Candidate[]>;
  deletes(q: Q, keys: Array<string | number>, cutoff: number): Array<{ table: RetentionTarget; statement: Statement<ResultSet> }>;
  /** The files its rows name, removed before the rows go. */
  files?: RuleFiles;
}

/**
 * Files removed before the rows that name them (a crash in between leaves
 * rows whose files are gone, deleted by the next sweep; the other order would
 * leave files nothing points at).
 */
export interface RuleFiles {
  /** The report key of the files it removes. */
  target: RetentionTarget;
  /** Answers the candidates whose rows may go now (the others' files are still in use), and how many files it removed. */
  remove(batch: Candidate[], cutoff: number): Promise<{ deletable: Candidate[]; removed: number }>;
}

/** Webhook delivery statuses that will not be attempted again (src/db/schema/webhooks.ts). */
export const SETTLED_DELIVERY = ["delivered", "abandoned", "dropped"];

const strings = (keys: Array<string | number>) => keys.map(String);
const numbers = (keys: Array<string | number>) => keys.map(Number);

/** Outbox rows the dispatcher already turned into deliveries; only rows not yet fanned out are ever read again. */
export function outboxRule(config: Config): RetentionRule {
  return {
    table: "outbox",
    cutoff: (now) => now - config.outboxRetentionMs,
    // Fanned out before the cutoff, never a row still waiting (src/outbox/outbox.ts).
    candidates: (q, cutoff, limit) => pruneOutbox.candidates(q, cutoff, limit),
    deletes: (q, keys, cutoff) => [{ table: "outbox", statement: pruneOutbox.delete(q, numbers(keys), cutoff) }],
  };
}

/** Settled deliveries by creation time (the order the deliveries list pages in), with their attempts. */
export function deliveriesRule(config: Config): RetentionRule {
  const settledBefore = (cutoff: number) => and(inArray(webhookDeliveries.status, SETTLED_DELIVERY), lt(webhookDeliveries.createdAt, cutoff));
  return {
    table: "webhook_deliveries",
    cutoff: (now) => now - config.webhookDeliveryRetentionMs,
    // One range of webhook_deliveries_settled per status.
    candidates: (q, cutoff, limit) => q.select({ key: webhookDeliveries.id }).from(webhookDeliveries).where(settledBefore(cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [
      { table: "webhook_attempts", statement: q.delete(webhookAttempts).where(inArray(webhookAttempts.deliveryId, strings(keys))) },
      { table: "webhook_deliveries", statement: q.delete(webhookDeliveries).where(and(inArray(webhookDeliveries.id, strings(keys)), settledBefore(cutoff))) },
    ],
  };
}

/** Deleted endpoints, once the deliveries period has passed and none of their deliveries is left. */
export function endpointsRule(config: Config): RetentionRule {
  // Index webhook_deliveries_endpoint.
  const gone = (cutoff: number) => and(lt(webhookEndpoints.deletedAt, cutoff), sql`not exists (select 1 from ${webhookDeliveries} where ${webhookDeliveries.endpointId} = ${webhookEndpoints.id})`);
  return {
    table: "webhook_endpoints",
    cutoff: (now) => now - config.webhookDeliveryRetentionMs,
    candidates: (q, cutoff, limit) => q.select({ key: webhookEndpoints.id }).from(webhookEndpoints).where(gone(cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "webhook_endpoints", statement: q.delete(webhookEndpoints).where(and(inArray(webhookEndpoints.id, strings(keys)), gone(cutoff))) }],
  };
}

/** Finished work (done, failed, cancelled): index work_finished. */
export function workRule(config: Config): RetentionRule {
  return {
    table: "work",
    cutoff: (now) => now - config.workRetentionMs,
    candidates: (q, cutoff, limit) => q.select({ key: work.id }).from(work).where(lt(work.finishedAt, cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "work", statement: q.delete(work).where(and(inArray(work.id, strings(keys)), lt(work.finishedAt, cutoff))) }],
  };
}

/**
 * Upload slots whose URL expired more than the period ago, except a
 * complete upload that a video (not deleted) was registered from:
 * registering its `source_url` again must keep answering that video
 * (idempotent on `source_url`, spec), which needs the row. Once the video is
 * deleted, the row goes too. Files are removed by `files` (uploadFiles).
 */
export function uploadsRule(config: Config, files: RuleFiles): RetentionRule {
  const prefix = `${config.baseUrl}/uploads/`;
  // Index actors_dedupe: (org_id, kind, dedupe_key) of actors not deleted.
  const usedByVideo = sql`exists (select 1 from ${actors} where ${actors.orgId} = ${uploads.orgId} and ${actors.kind} = 'video' and ${actors.dedupeKey} = ${prefix} || ${uploads.id} and ${actors.deletedAt} is null)`;
  const unused = (cutoff: number) => and(lt(uploads.expiresAt, cutoff), not(and(eq(uploads.status, "complete"), usedByVideo)!));
  return {
    table: "uploads",
    cutoff: (now) => now - config.uploadRetentionMs,
    candidates: (q, cutoff, limit) => q.select({ key: uploads.id, status: uploads.status }).from(uploads).where(unused(cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "uploads", statement: q.delete(uploads).where(and(inArray(uploads.id, strings(keys)), unused(cutoff))) }],
    files,
  };
}

/**
 * Resumable (tus) uploads abandoned unfinished: a slot still `receiving`
 * with its announced length in `size_bytes` (what marks a tus upload,
 * src/videos/tus-uploads.ts) whose expiry has passed. Each PATCH pushes the
 * expiry an upload TTL ahead, so only an upload idle that long is here. Its
 * slot row goes with its partial file (`files`: DATA_DIR/uploads/tus/).
 */
export function tusUploadsRule(files: RuleFiles): RetentionRule {
  const abandoned = (cutoff: number) => and(lt(uploads.expiresAt, cutoff), eq(uploads.status, "receiving"), isNotNull(uploads.sizeBytes));
  return {
    table: "uploads",
    cutoff: (now) => now,
    candidates: (q, cutoff, limit) => q.select({ key: uploads.id, status: uploads.status }).from(uploads).where(abandoned(cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "uploads", statement: q.delete(uploads).where(and(inArray(uploads.id, strings(keys)), abandoned(cutoff))) }],
    files,
  };
}

/**
 * Soft-deleted videos and streams, for good: their tags, (a stream's)
 * stream key digests, (a DRM video's) content key and (a signed or
 * restricted asset's) playback_access row go with them; `files` removes what a deleted video may
 * have left on disk.
 */
export function actorsRule(config: Config, files: RuleFiles): RetentionRule {
  return {
    table: "actors",
    cutoff: (now) => now - config.deletedActorRetentionMs,
    candidates: (q, cutoff, limit) => q.select({ key: actors.id, kind: actors.kind, orgId: actors.orgId }).from(actors).where(lt(actors.deletedAt, cutoff)).limit(limit),
    deletes: (q, keys) => [
      { table: "actor_tags", statement: q.delete(actorTags).where(inArray(actorTags.actorId, strings(keys))) },
      { table: "stream_key_digests", statement: q.delete(streamKeys).where(inArray(streamKeys.streamId, strings(keys))) },
      // A deleted video answers no licence (drm-keys.ts forLicence), so its key has no use once the actor goes.
      { table: "drm_keys", statement: q.delete(drmKeys).where(inArray(drmKeys.videoId, strings(keys))) },
      // A deleted asset's media are gone and its media token (an HMAC of the id) is never handed out again.
      { table: "playback_access", statement: q.delete(playbackAccess).where(inArray(playbackAccess.assetId, strings(keys))) },
      // deleted_at is never cleared: deleted is a final state.
      { table: "actors", statement: q.delete(actors).where(and(inArray(actors.id, strings(keys)), sql`${actors.deletedAt} is not null`)) },
    ],
    files,
  };
}

/**
 * Rate-limit windows closed for a whole window already. The limiter's flush
 * deletes closed windows too, but only while requests arrive: these are the
 * leftovers of an idle or stopped process.
 */
export function rateLimitsRule(config: Config): RetentionRule {
  return {
    table: "rate_limits",
    cutoff: (now) => now - 2 * config.rateLimitWindowMs,
    candidates: (q, cutoff, limit) => q.select({ key: rateLimits.key }).from(rateLimits).where(lt(rateLimits.windowStart, cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "rate_limits", statement: q.delete(rateLimits).where(and(inArray(rateLimits.key, strings(keys)), lt(rateLimits.windowStart, cutoff))) }],
  };
}

/**
 * Settings-screen sessions past their expiry (idle or absolute, whichever
 * came first: src/people/sessions.ts keeps `expires_at` at the earlier).
 * An expired session already signs nobody in; this only frees its row.
 */
export function sessionsRule(): RetentionRule {
  return {
    table: "sessions",
    cutoff: (now) => now,
    candidates: (q, cutoff, limit) => q.select({ key: sessions.idHash }).from(sessions).where(lt(sessions.expiresAt, cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "sessions", statement: q.delete(sessions).where(and(inArray(sessions.idHash, strings(keys)), lt(sessions.expiresAt, cutoff))) }],
  };
}

/** Setup links (owner setup, invitations) past their expiry, used or not. */
export function setupTokensRule(): RetentionRule {
  return {
    table: "setup_tokens",
    cutoff: (now) => now,
    candidates: (q, cutoff, limit) => q.select({ key: setupTokens.tokenHash }).from(setupTokens).where(lt(setupTokens.expiresAt, cutoff)).limit(limit),
    deletes: (q, keys, cutoff) => [{ table: "setup_tokens", statement: q.delete(setupTokens).where(and(inArray(setupTokens.tokenHash, strings(keys)), lt(setupTokens.expiresAt, cutoff))) }],
  };
}
