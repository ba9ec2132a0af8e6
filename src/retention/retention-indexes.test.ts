import { afterAll, beforeAll, expect, test } from "bun:test";
import { fileChecks } from "./retention-files.ts";
import type { Fixture } from "./retention-fixture.ts";
import { openFixture } from "./retention-fixture.ts";
import {
  actorsRule,
  deliveriesRule,
  endpointsRule,
  outboxRule,
  type Q,
  type RuleFiles,
  rateLimitsRule,
  sessionsRule,
  setupTokensRule,
  type Statement,
  uploadsRule,
  workRule,
} from "./retention-rules.ts";

/**
 * Every statement retention runs, explained by SQLite on the migrated schema:
 * each table is reached through an index or its primary key, never scanned
 * (a scan under the write queue would hold every writer for the length of
 * the table).
 */
let fx: Fixture;
beforeAll(async () => {
  fx = await openFixture();
});
afterAll(() => fx.close());

async function plan(statement: Statement<unknown>): Promise<string[]> {
  const { sql, params } = statement.toSQL();
  const res = await fx.database.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never });
  return res.rows.map((r) => String(r.detail));
}

function expectIndexed(detail: string[]) {
  expect(detail.length).toBeGreaterThan(0);
  for (const step of detail) expect(step).not.toMatch(/^SCAN /);
  expect(detail.some((step) => /^SEARCH \w+ USING (COVERING )?INDEX|^SEARCH \w+ USING INTEGER PRIMARY KEY/.test(step))).toBe(true);
}

const noFiles: RuleFiles = { target: "upload_files", remove: async () => ({ deletable: [], removed: 0 }) };

test("each rule finds its candidates and deletes its rows through an index", async () => {
  const q = fx.database.db as unknown as Q;
  const { config } = fx;
  const rules = [
    outboxRule(config),
    deliveriesRule(config),
    endpointsRule(config),
    workRule(config),
    uploadsRule(config, noFiles),
    actorsRule(config, noFiles),
    rateLimitsRule(config),
    sessionsRule(),
    setupTokensRule(),
  ];
  const expected: Record<string, RegExp> = {
    outbox: /USING COVERING INDEX outbox_pending/,
    webhook_deliveries: /USING INDEX webhook_deliveries_settled/,
    webhook_endpoints: /USING INDEX webhook_endpoints_deleted/,
    work: /USING INDEX work_finished/,
    uploads: /USING INDEX uploads_expires/,
    actors: /USING INDEX actors_deleted/,
    rate_limits: /USING INDEX rate_limits_window/,
    sessions: /USING INDEX sessions_expires/,
    setup_tokens: /USING INDEX setup_tokens_expires/,
  };
  for (const rule of rules) {
    const found = await plan(rule.candidates(q, Date.now(), 500));
    expectIndexed(found);
    expect(found[0]).toMatch(expected[rule.table]!);
    const keys = rule.table === "outbox" ? [1, 2, 3] : ["a", "b", "c"];
    for (const d of rule.deletes(q, keys, Date.now())) expectIndexed(await plan(d.statement));
  }
});

test("the subqueries that keep rows (an endpoint's deliveries, an upload's video) use indexes", async () => {
  const q = fx.database.db as unknown as Q;
  expect(await plan(endpointsRule(fx.config).candidates(q, 1, 500))).toContain("SEARCH webhook_deliveries USING COVERING INDEX webhook_deliveries_endpoint (endpoint_id=?)");
  expect(await plan(uploadsRule(fx.config, noFiles).candidates(q, 1, 500))).toContain("SEARCH actors USING INDEX actors_dedupe (org_id=? AND kind=? AND dedupe_key=?)");
});

test("the reads that prove a file unused use indexes", async () => {
  const q = fx.database.db as unknown as Q;
  for (const statement of [
    fileChecks.broadcast(q, "str_x"),
    fileChecks.openWork(q, "str_x"),
    fileChecks.openTranscodeOf(q, "str_x.flv"),
    fileChecks.actor(q, "str_x"),
    fileChecks.settled(q, { kind: "video", orgId: "org_x", id: "vid_x" }),
    fileChecks.recordingVideo(q, "org_x", "str_x"),
  ])
    expectIndexed(await plan(statement));
});
