import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { Logger } from "../log.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { deletedVideoFiles, sweepRecordings, sweepWorkDirs, uploadFiles } from "./retention-files.ts";
import { tusUploadFiles } from "./tus-upload-files.ts";
import {
  actorsRule,
  deliveriesRule,
  endpointsRule,
  outboxRule,
  RETENTION_TARGETS,
  rateLimitsRule,
  sessionsRule,
  setupTokensRule,
  tusUploadsRule,
  uploadsRule,
  workRule,
  type Q,
  type RetentionReport,
  type RetentionRule,
  type RetentionTarget,
} from "./retention-rules.ts";
import { analyticsRetentionRules } from "../analytics/analytics-retention.ts";

export type { RetentionReport } from "./retention-rules.ts";

export interface RetentionOptions {
  database: Database;
  config: Config;
  logger: Logger;
  /** Removes a deleted video's served folder (MediaStore.remove); without it only its work and originals folders are looked at. */
  removeMedia?: (videoId: string) => Promise<void>;
  /** The object store (src/storage): with STORAGE=s3 the files of uploads, recordings, originals and work live in its bucket too. */
  objects?: ObjectStore;
  /** Rows per delete statement (default 500): each batch is its own short write transaction. */
  batchSize?: number;
  /** A file or folder written this recently is never removed, whatever the rows say (default 10 min). */
  fileGraceMs?: number;
}

const emptyReport = (): RetentionReport => Object.fromEntries(RETENTION_TARGETS.map((t) => [t, 0])) as RetentionReport;
/** Lets requests and other writers in between two batches. */
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Deletes what has outlived its retention period, table by table, in
 * batches: one short write transaction per batch of at most `batchSize`
 * rows, found through an index, so the single write queue is never held
 * long and a large backlog is worked off across many transactions. A
 * table's batches go on until one comes back short. Rows are deleted
 * oldest period first; files are removed before the rows that name them.
 * See README.md for what each rule keeps and why.
 */
export function createRetention(opts: RetentionOptions) {
  const { database, config } = opts;
  const log = opts.logger.child({ component: "retention" });
  const batchSize = opts.batchSize ?? 500;
  const graceMs = opts.fileGraceMs ?? 10 * 60_000;
  // Order: deliveries before their deleted endpoints; actors before the folder sweeps that ask whether they exist.
  const rules: RetentionRule[] = [
    outboxRule(config),
    deliveriesRule(config),
    endpointsRule(config),
    workRule(config),
    // Abandoned resumable uploads first: their slots expire sooner than uploadsRule's period.
    tusUploadsRule(tusUploadFiles(config.dataDir)),
    uploadsRule(config, uploadFiles(config.dataDir, opts.objects)),
    actorsRule(config, deletedVideoFiles(config.dataDir, opts.removeMedia, opts.objects)),
    rateLimitsRule(config),
    sessionsRule(),
    setupTokensRule(),
    ...analyticsRetentionRules(),
  ];
  const reader = database.db as unknown as Q;

  /** One batch of one rule; answers how many of its rows it deleted (a short batch ends the rule). */
  async function batch(rule: RetentionRule, cutoff: number, report: RetentionReport, stats: { maxBatchMs: number; totalBatchMs: number }): Promise<number> {
    const add = (table: RetentionTarget, n: number) => {
      report[table] += n;
    };
    /** A write transaction, timed: how long a batch holds the write queue is the figure that matters to other writers. */
    const write = <T>(fn: (q: Q) => Promise<T>) =>
      database.write(async (tx) => {
        const t = performance.now();
        try {
          return await fn(tx as unknown as Q);
        } finally {
          const held = performance.now() - t;
          stats.maxBatchMs = Math.max(stats.maxBatchMs, held);
          stats.totalBatchMs += held;
        }
      });
    if (!rule.files) {
      // Found and deleted in one transaction: nothing can change in between.
      return write(async (q) => {
        const keys = (await rule.candidates(q, cutoff, batchSize)).map((c) => c.key);
        if (keys.length === 0) return 0;
        for (const d of rule.deletes(q, keys, cutoff)) add(d.table, (await d.statement).rowsAffected);
        return keys.length;
      });
    }
    // Files are removed outside the write queue, between the read and the delete (which checks the rule again).
    const found = await rule.candidates(reader, cutoff, batchSize);
    if (found.length === 0) return 0;
    const { deletable, removed } = await rule.files.remove(found, cutoff);
    add(rule.files.target, removed);
    if (deletable.length === 0) return 0;
    const keys = deletable.map((c) => c.key);
    return write(async (q) => {
      let deleted = 0;
      for (const d of rule.deletes(q, keys, cutoff)) {
        const n = (await d.statement).rowsAffected;
        add(d.table, n);
        if (d.table === rule.table) deleted += n;
      }
      // Kept candidates (a transfer under way) stay at the front of the range: a batch that deletes less than a full one ends the rule.
      return deleted;
    });
  }

  return {
    /**
     * One pass over every table and folder; answers `{ target: deleted }`.
     * A rule that fails is logged and the others still run; `signal` stops
     * the sweep between two batches.
     */
    async sweep(now: number = Date.now(), sweepOpts: { signal?: AbortSignal } = {}): Promise<RetentionReport> {
      const { signal } = sweepOpts;
      const started = performance.now();
      const report = emptyReport();
      let batches = 0;
      let failed = 0;
      const stats = { maxBatchMs: 0, totalBatchMs: 0 };
      for (const rule of rules) {
        const cutoff = rule.cutoff(now);
        try {
          for (;;) {
            signal?.throwIfAborted();
            const n = await batch(rule, cutoff, report, stats);
            batches++;
            if (n < batchSize) break;
            await breathe();
          }
        } catch (err) {
          if (signal?.aborted) throw err;
          failed++;
          log.error("Retention rule failed; the others still run", { err, table: rule.table });
        }
      }
      for (const [target, sweepFolder] of [
        ["recordings", sweepRecordings],
        ["work_dirs", sweepWorkDirs],
      ] as const) {
        try {
          report[target] += await sweepFolder(reader, config.dataDir, now, graceMs, signal, opts.objects);
        } catch (err) {
          if (signal?.aborted) throw err;
          failed++;
          log.error("Retention folder sweep failed", { err, folder: target });
        }
      }
      log.info("Retention sweep", {
        ...report,
        batches,
        failed_rules: failed,
        duration_ms: Math.round(performance.now() - started),
        // How long a batch held the write queue (inside its transaction): what other writers feel.
        max_batch_ms: Math.round(stats.maxBatchMs * 10) / 10,
        held_ms: Math.round(stats.totalBatchMs),
      });
      return report;
    },
  };
}

export type Retention = ReturnType<typeof createRetention>;
