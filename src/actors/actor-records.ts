/**
 * Reading actors: stored rows opened into records (states migrated to this
 * version's, secrets opened), kept per row version, and the item and page
 * reads the API serves. The write path (actor-runtime.ts) opens rows with the
 * same `upgrade` and `toRecord`.
 */
import type { AnyStateMachine } from "xstate";
import type { Database } from "../db/create-database.ts";
import type { actors } from "../db/schema/index.ts";
import type { ActorKindSpec, ActorKinds, ActorTag, AnyActorTag } from "./actor-kind-spec.ts";
import type { ActorContext, ActorKindName } from "./actor-kinds.ts";

/** A stored state written by a newer machine than this process knows, or one no migration reaches. */
export class ActorVersionError extends Error {
  override name = "ActorVersionError";
  constructor(
    readonly actorId: string,
    readonly stored: number,
    readonly known: number,
  ) {
    super(`Actor ${actorId} was stored by machine version ${stored}; this process runs version ${known} and cannot read it.`);
  }
}

/** A stored actor opened; `T`: the tags its machine declares (any kind's when the kind is not known). */
export interface ActorRecord<C = any, T extends string = AnyActorTag> {
  id: string;
  kind: ActorKindName;
  orgId: string;
  status: string;
  value: unknown;
  context: C;
  tags: ReadonlySet<T>;
  createdAt: number;
  updatedAt: number;
  version: number;
}

/** A page of `list`: keyset cursor plus optional filters. */
export interface ListPage {
  limit: number;
  cursor?: { createdAt: number; id: string };
  status?: readonly string[];
  contextKind?: string;
}

export interface Persisted {
  value: unknown;
  context: unknown;
}

export type Row = typeof actors.$inferSelect;
/** A record inside this module and the runtime: its kind (and so its context and tags) known only at run time. */
export type AnyRecord = ActorRecord<any, any>;

/** What a read needs to know whether its cached record is current: the columns of every list and lookup. */
const HEAD_COLUMNS = "id, org_id, version, updated_at";
const ROW_COLUMNS = "id, kind, org_id, status, state, dedupe_key, version, machine_version, created_at, updated_at, deleted_at";
const GET_ROW_SQL = `SELECT ${ROW_COLUMNS} FROM actors WHERE id = ? AND kind = ? AND deleted_at IS NULL LIMIT 1`;

/** A raw row (ROW_COLUMNS, in order) as drizzle would map it. */
function rowOf(r: unknown[]): Row {
  return {
    id: r[0] as string,
    kind: r[1] as string,
    orgId: r[2] as string,
    status: r[3] as string,
    state: JSON.parse(r[4] as string),
    dedupeKey: (r[5] as string | null) ?? null,
    version: Number(r[6]),
    machineVersion: Number(r[7]),
    createdAt: Number(r[8]),
    updatedAt: Number(r[9]),
    deletedAt: r[10] === null || r[10] === undefined ? null : Number(r[10]),
  };
}

export function createActorRecords(database: Database, kinds: ActorKinds, openContext: (kind: ActorKindName, stored: unknown, id: string) => unknown) {
  const spec = <K extends ActorKindName>(kind: K): ActorKindSpec<K> => kinds[kind];
  const machineOf = (kind: ActorKindName) => spec(kind).machine as AnyStateMachine;

  /** The stored state in this version's terms; `migrated` when it was older. */
  function upgrade(row: Row): { state: Persisted; migrated: boolean } {
    const s = spec(row.kind as ActorKindName);
    const st = row.state as Persisted;
    if (row.machineVersion === s.version) return { state: st, migrated: false };
    if (row.machineVersion > s.version || !s.migrate) throw new ActorVersionError(row.id, row.machineVersion, s.version);
    let value = st.value;
    for (let v = row.machineVersion; v < s.version; v++) value = s.migrate(v, value);
    return { state: { value, context: st.context }, migrated: true };
  }

  function toRecord(row: Row, state = upgrade(row).state): AnyRecord {
    const kind = row.kind as ActorKindName;
    const context = openContext(kind, state.context, row.id);
    // Resolved from the machine only when asked: a page of a list never pays for it.
    let tags: ReadonlySet<AnyActorTag> | undefined;
    return {
      id: row.id,
      kind,
      orgId: row.orgId,
      status: row.status,
      value: state.value,
      context,
      get tags() {
        tags ??= new Set(machineOf(kind).resolveState({ value: state.value as never, context }).tags) as ReadonlySet<AnyActorTag>;
        return tags;
      },
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      version: row.version,
    };
  }

  /**
   * Opened records by (organization, actor id), each with the row version it was read at. A
   * read still reads the row's version on every call (a transition by any process is seen at
   * once: every stored transition bumps it); only parsing and opening the same state again is
   * skipped. Bounded: the oldest entry leaves first.
   */
  const records = new Map<string, AnyRecord>();
  const RECORD_CACHE_MAX = 5000;

  /** The cached record of a row head (HEAD_COLUMNS), when it is the row's current version. */
  function cachedHead(h: unknown[]): AnyRecord | undefined {
    const hit = records.get(`${h[1] as string}:${h[0] as string}`);
    return hit && hit.version === Number(h[2]) && hit.updatedAt === Number(h[3]) ? hit : undefined;
  }

  /** A whole row (ROW_COLUMNS) as a record: the cached one when its version matches, else parsed, opened and kept. */
  function recordOfRow(r: unknown[]): AnyRecord {
    const key = `${r[2] as string}:${r[0] as string}`;
    const hit = records.get(key);
    if (hit && hit.version === Number(r[6]) && hit.updatedAt === Number(r[9])) return hit;
    const record = toRecord(rowOf(r));
    if (records.size >= RECORD_CACHE_MAX) records.delete(records.keys().next().value!);
    records.delete(key);
    records.set(key, record);
    return record;
  }

  /** Records for row heads, in their order: the cached ones when current, the others read whole in one query. */
  async function readRecords(heads: unknown[][]): Promise<AnyRecord[]> {
    const missing = heads.filter((h) => !cachedHead(h)).map((h) => h[0]);
    const read = new Map<string, AnyRecord>();
    if (missing.length > 0) {
      const rows = await database.hot.all(`SELECT ${ROW_COLUMNS} FROM actors WHERE id IN (${missing.map(() => "?").join(", ")})`, missing);
      for (const r of rows) read.set(r[0] as string, recordOfRow(r));
    }
    const out: AnyRecord[] = [];
    for (const h of heads) {
      // Absent: deleted for good between the two reads.
      const record = cachedHead(h) ?? read.get(h[0] as string);
      if (record) out.push(record);
    }
    return out;
  }

  /** One page of `list`, read. */
  async function listPage(kind: ActorKindName, orgId: string, page: ListPage): Promise<AnyRecord[]> {
    const c = page.cursor;
    const where = ["org_id = ?", "kind = ?", "deleted_at IS NULL"];
    const args: unknown[] = [orgId, kind];
    if (c) {
      where.push("(created_at < ? OR (created_at = ? AND id < ?))");
      args.push(c.createdAt, c.createdAt, c.id);
    }
    if (page.status?.length) {
      where.push(`status IN (${page.status.map(() => "?").join(", ")})`);
      args.push(...page.status);
    }
    if (page.contextKind !== undefined) {
      where.push("json_extract(state, '$.context.kind') = ?");
      args.push(page.contextKind);
    }
    args.push(page.limit);
    const from = `FROM actors WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`;
    // On a server (or with the cache off): one round trip for whole rows; the records cache still skips opening.
    if (database.hot.remote || database.hot.version() === null) return (await database.hot.all(`SELECT ${ROW_COLUMNS} ${from}`, args)).map(recordOfRow);
    // One row holding the page's heads as JSON: libSQL's row iteration costs about a microsecond per row and column.
    const r = await database.hot.get(`SELECT json_group_array(json_array(${HEAD_COLUMNS}, created_at)) FROM (SELECT ${HEAD_COLUMNS}, created_at ${from})`, args);
    const heads = JSON.parse((r?.[0] as string | undefined) ?? "[]") as unknown[][];
    // An aggregate's input order is not promised by SQL: newest first again, as the index reads them.
    heads.sort((a, b) => (b[4] as number) - (a[4] as number) || (a[0] === b[0] ? 0 : (a[0] as string) < (b[0] as string) ? 1 : -1));
    return readRecords(heads);
  }

  return {
    upgrade,
    toRecord,

    /** Reads an actor of one organization: another organization's id is simply absent. */
    get<K extends ActorKindName>(kind: K, id: string, orgId?: string): Promise<ActorRecord<ActorContext<K>, ActorTag<K>> | null> {
      // Unchanged database, same answer (src/db/read-cache.ts); the key names the organization asked for.
      return database.cache.read(`actor:${kind}:${orgId ?? "*"}:${id}`, async () => {
        const row = await database.hot.get(GET_ROW_SQL, [id, kind]);
        if (!row || (orgId !== undefined && row[2] !== orgId)) return null;
        return recordOfRow(row);
      });
    },

    /**
     * One organization's actors of a kind, newest first. Optional filters: `status`
     * (any of, on the indexed status column) and `contextKind` (the stored
     * context's `kind`, e.g. a video's UPLOAD / LIVESTREAM_RECORDING); both are
     * `and`ed into the same keyset scan of the (org_id, kind, created_at, id) index.
     * Reads ids and versions only; a state is read and opened when its version is not cached.
     */
    list<K extends ActorKindName>(kind: K, orgId: string, page: ListPage): Promise<ActorRecord<ActorContext<K>, ActorTag<K>>[]> {
      const key = `actors:${kind}:${orgId}:${page.limit}:${page.cursor ? `${page.cursor.createdAt}:${page.cursor.id}` : ""}:${page.status?.join(",") ?? ""}:${page.contextKind ?? ""}`;
      return database.cache.read(key, () => listPage(kind, orgId, page));
    },
  };
}

export type ActorRecords = ReturnType<typeof createActorRecords>;
