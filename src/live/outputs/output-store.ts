import { and, asc, count, eq, inArray } from "drizzle-orm";
import type { Database, Tx } from "../../db/create-database.ts";
import { liveOutputs } from "../../db/schema/index.ts";
import { newId } from "../../ids.ts";
import type { NewEvent } from "../../outbox/outbox.ts";
import type { SecretCipher } from "../../secrets/secret-cipher.ts";
import { InvalidInput } from "../../errors.ts";
import type { OutputTarget } from "./output-target.ts";
import type { StreamOutput } from "../../../machines/livestream-payload.ts";

export type OutputRow = typeof liveOutputs.$inferSelect;
export const OUTPUT_STATUSES = ["idle", "connecting", "active", "reconnecting", "failed", "stopped"] as const;
export type OutputStatus = (typeof OUTPUT_STATUSES)[number];

/** The output as the API shows it (`outputs[]` of a stream, `data.output`). */
export type OutputView = StreamOutput;

/** A change the runner writes back: status, counters, and the event it fires. */
export interface OutputChange {
  id: string;
  status?: OutputStatus;
  bytesSent?: number;
  startedAt?: number | null;
  lastError?: string | null;
  event?: "LIVESTREAM_OUTPUT_ACTIVE" | "LIVESTREAM_OUTPUT_FAILED";
}

const RUNNING = new Set<string>(["connecting", "active", "reconnecting"]);

/**
 * The shown form of a row. A stream that has ended has no running output,
 * whatever the row says (an owner killed before it wrote `stopped`).
 */
export function outputView(row: OutputRow, streamSettled = false): OutputView {
  const status = (streamSettled && RUNNING.has(row.status) ? "stopped" : row.status) as OutputStatus;
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    status,
    bytes_sent: row.bytesSent,
    started_at: row.startedAt === null ? null : new Date(row.startedAt).toISOString(),
    last_error: row.lastError,
  };
}

/**
 * Table `live_outputs` (issue 26): declared targets with their sealed URL,
 * and the status the broadcast's owner writes back with its events in the
 * same transaction. The only module naming the table.
 */
export function createOutputStore(deps: {
  database: Database;
  cipher: SecretCipher;
  maxPerStream: number;
  /** Outbox rows in the caller's transaction (src/outbox), for the ACTIVE / FAILED events. */
  appendEvents: (tx: Tx, events: NewEvent[]) => Promise<unknown>;
  /** The events some endpoint of the organization listens to (others are written already fanned out). */
  subscribedEvents?: (tx: Tx, orgId: string) => Promise<ReadonlySet<string>>;
}) {
  const { database, cipher } = deps;
  return {
    maxPerStream: deps.maxPerStream,

    /** Adds targets to a stream inside `tx` (the stream's creation, or alone): 422 `details.outputs` past the limit. */
    async addIn(tx: Tx, streamId: string, orgId: string, targets: Array<{ target: OutputTarget; name: string | null }>): Promise<OutputRow[]> {
      const [row] = await tx.select({ n: count() }).from(liveOutputs).where(eq(liveOutputs.streamId, streamId));
      if ((row?.n ?? 0) + targets.length > deps.maxPerStream) {
        throw new InvalidInput({ outputs: `At most ${deps.maxPerStream} outputs per stream (LIVE_OUTPUTS_PER_STREAM).` });
      }
      const now = Date.now();
      const rows: OutputRow[] = targets.map((t, i) => {
        const id = newId("out");
        return {
          id,
          streamId,
          orgId,
          name: t.name,
          url: t.target.shown,
          sealedTarget: cipher.seal(JSON.stringify(t.target), id),
          status: "idle",
          bytesSent: 0,
          startedAt: null,
          lastError: null,
          createdAt: now + i,
        };
      });
      if (rows.length > 0) await tx.insert(liveOutputs).values(rows);
      return rows;
    },

    /** Adds targets to an existing stream (its own transaction). */
    add(streamId: string, orgId: string, targets: Array<{ target: OutputTarget; name: string | null }>): Promise<OutputRow[]> {
      return database.write((tx) => this.addIn(tx, streamId, orgId, targets));
    },

    /**
     * The outputs of these streams, oldest first. Through the read cache (src/db/read-cache.ts) like the stream
     * records they go with: a GET of a stream or a page of them costs no query while nothing was committed
     * (bench:api: an uncached query here took GET /livestreams/{id}/ from 0.5 to 0.1 of a bare server).
     * On a libSQL server, changes to live_outputs bump the change feed (migration 0022).
     */
    async ofStreams(streamIds: readonly string[]): Promise<OutputRow[]> {
      if (streamIds.length === 0) return [];
      const ids = [...streamIds];
      return database.cache.read(`outputs:${ids.join(",")}`, () =>
        database.db.select().from(liveOutputs).where(inArray(liveOutputs.streamId, ids)).orderBy(asc(liveOutputs.createdAt), asc(liveOutputs.id)),
      );
    },

    async get(streamId: string, id: string): Promise<OutputRow | null> {
      const [row] = await database.db
        .select()
        .from(liveOutputs)
        .where(and(eq(liveOutputs.streamId, streamId), eq(liveOutputs.id, id)));
      return row ?? null;
    },

    async remove(streamId: string, id: string): Promise<boolean> {
      const gone = await database.write((tx) =>
        tx
          .delete(liveOutputs)
          .where(and(eq(liveOutputs.streamId, streamId), eq(liveOutputs.id, id)))
          .returning({ id: liveOutputs.id }),
      );
      return gone.length > 0;
    },

    removeAllIn: (tx: Tx, streamId: string) => tx.delete(liveOutputs).where(eq(liveOutputs.streamId, streamId)),

    /** The target as sent (key included): for the sender only. */
    targetOf: (row: OutputRow): OutputTarget => JSON.parse(cipher.open(row.sealedTarget, row.id)) as OutputTarget,

    /** The runner's changes in one transaction, each event with the output as it now is; a deleted output's change is dropped. */
    async record(changes: readonly OutputChange[]): Promise<void> {
      if (changes.length === 0) return;
      await database.write(async (tx) => {
        const events: NewEvent[] = [];
        for (const c of changes) {
          const set: Partial<OutputRow> = {};
          if (c.status !== undefined) set.status = c.status;
          if (c.bytesSent !== undefined) set.bytesSent = c.bytesSent;
          if (c.startedAt !== undefined) set.startedAt = c.startedAt;
          if (c.lastError !== undefined) set.lastError = c.lastError;
          const [row] = await tx.update(liveOutputs).set(set).where(eq(liveOutputs.id, c.id)).returning();
          if (!row || !c.event) continue;
          const heard = await deps.subscribedEvents?.(tx, row.orgId);
          events.push({ orgId: row.orgId, entityId: row.streamId, event: c.event, data: { stream_id: row.streamId, output: outputView(row) }, fannedOut: heard !== undefined && !heard.has(c.event) });
        }
        if (events.length > 0) await deps.appendEvents(tx, events);
      });
    },
  };
}

export type OutputStore = ReturnType<typeof createOutputStore>;
