import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase } from "../src/db/create-database.ts";
import { outbox } from "../src/db/schema/index.ts";
import { FIXTURES } from "./support/file-server.ts";
import { type Child, spawnService } from "./support/service-process.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

/**
 * Issue 24 item 1, as a property: whatever the points at which the process
 * is killed (a crash point of the pipeline, src/faults.ts, or a kill -9 after
 * a random delay), and however many times in a row, every registered video
 * ends COMPLETED or ERROR, with the cause its source deserves, and each of
 * its events is written once. Before, a crash between the work row's
 * `failed` and the video's TRANSCODING_FAILED (two transactions) left the
 * video TRANSCODING for ever with no open work.
 */

const CRASH_POINTS = [
  "work:after-claim:fetch-source",
  "work:after-claim:transcode",
  "fetch:after-fetch",
  "transcode:after-started",
  "transcode:after-store",
  "work:before-outcome:fetch-source",
  "work:before-outcome:transcode",
  "work:after-failed:fetch-source",
  "work:after-failed:transcode",
] as const;

type Step = { fault: (typeof CRASH_POINTS)[number] } | { killAfterMs: number };

// Short leases: a killed process's claimed work is taken over within the test.
const ENV = { JOB_LEASE_MS: "1500" };

/** The sources of one run: media that transcodes, media that cannot be read, and a URL that answers 404. */
const SOURCES = [
  { path: "av-odd-322x242-2s.mp4", status: "COMPLETED", code: null },
  { path: "corrupt.mp4", status: "ERROR", code: "INPUT_UNSUPPORTED" },
  { path: "missing.mp4", status: "ERROR", code: "SOURCE_NOT_FOUND" },
  { path: "missing.mp4", status: "ERROR", code: "SOURCE_NOT_FOUND" },
] as const;

/**
 * The sources' origin: it holds every request until the gate opens (after the first process registered the run's
 * videos), so the pipeline starts in the processes that crash, not in the one that registers.
 */
let gate = Promise.withResolvers<void>();
const origin = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    await gate.promise;
    const file = Bun.file(join(FIXTURES, new URL(req.url).pathname.slice(1).replace(/[^\w.-]/g, "")));
    return (await file.exists()) ? new Response(file) : new Response("not found", { status: 404 });
  },
});
const sourceUrl = (path: string) => `http://127.0.0.1:${origin.port}/${path}`;
let run = 0;
const dirs: string[] = [];
const alive = new Set<Child>();

afterAll(async () => {
  for (const c of alive) c.proc.kill("SIGKILL");
  origin.stop(true);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const exited = (c: Child) => c.proc.exitCode !== null || c.proc.signalCode !== null;

/** Starts a process; one that dies at a crash point before it answered counts as started and crashed. */
async function start(dataDir: string, org: { orgId: string; apiKey: string } | undefined, env: Record<string, string> = {}): Promise<Child | null> {
  try {
    const c = await spawnService({ DATA_DIR: dataDir, LOG_LEVEL: "warn", ...ENV, ...env }, org);
    alive.add(c);
    return c;
  } catch (err) {
    if (String(err).includes("exited before it was ready")) return null;
    throw err;
  }
}

async function kill(c: Child | null): Promise<void> {
  if (!c) return;
  if (!exited(c)) c.proc.kill("SIGKILL");
  await c.proc.exited;
  alive.delete(c);
}

/** Runs one step: a process with the crash point armed until it dies there (or 20 s), or a process killed after a delay. */
async function runStep(dataDir: string, org: { orgId: string; apiKey: string }, step: Step): Promise<void> {
  if ("fault" in step) {
    const c = await start(dataDir, org, { VIDLIVE_FAULT: step.fault });
    if (c) await Promise.race([c.proc.exited, Bun.sleep(20_000)]);
    await kill(c);
  } else {
    const c = await start(dataDir, org);
    await Bun.sleep(step.killAfterMs);
    await kill(c);
  }
}

async function videoOf(c: Child, id: string): Promise<{ status: string; error: { code: string } | null }> {
  const body = (await (await c.api(`/videos/${id}/`)).json()) as { data: { video: { status: string }; error: { code: string } | null } };
  return { status: body.data.video.status, error: body.data.error };
}

const steps = fc.array(fc.oneof(fc.record({ fault: fc.constantFrom(...CRASH_POINTS) }), fc.record({ killAfterMs: fc.integer({ min: 0, max: 3_000 }) })), { minLength: 1, maxLength: 3 });

test("killed at any points of the pipeline, any number of times, every video ends COMPLETED or ERROR with its events written once", async () => {
  await fc.assert(
    fc.asyncProperty(steps, async (crashes) => {
      const dataDir = mkdtempSync(join(tmpdir(), "crash-prop-"));
      dirs.push(dataDir);
      run++;
      // The first process registers the videos and is killed before any fetch is answered (they wait for the gate).
      gate = Promise.withResolvers<void>();
      const first = (await start(dataDir, undefined))!;
      const org = { orgId: first.orgId, apiKey: first.apiKey };
      const ids: string[] = [];
      for (const [i, s] of SOURCES.entries()) {
        const res = await first.api("/videos/", { method: "POST", json: { source_url: `${sourceUrl(s.path)}?run=${run}&i=${i}` } });
        expect(res.status).toBe(201);
        ids.push(((await res.json()) as { data: { asset: { public_id: string } } }).data.asset.public_id);
      }
      await kill(first);
      gate.resolve();
      for (const step of crashes) await runStep(dataDir, org, step);

      // A process without faults finishes what is left.
      const last = (await start(dataDir, org))!;
      const deadline = Date.now() + 120_000;
      let videos: Array<{ status: string; error: { code: string } | null }> = [];
      for (;;) {
        videos = await Promise.all(ids.map((id) => videoOf(last, id)));
        if (videos.every((v) => v.status !== "TRANSCODING") || Date.now() > deadline) break;
        await Bun.sleep(250);
      }
      await last.stop();
      alive.delete(last);
      const context = `run ${run}: ${JSON.stringify(crashes)}`;
      // Terminal, each with its source's cause. The good medium may also end ERROR: a run killed mid-transcode
      // spends one of its three attempts (a medium that kills its process must not loop for ever).
      const expected = SOURCES.map((s, i) =>
        s.status === "COMPLETED" && videos[i]?.status === "ERROR" ? { status: "ERROR", code: videos[i]!.error?.code ?? null } : { status: s.status, code: s.code },
      );
      expect({ context, videos: videos.map((v) => ({ status: v.status, code: v.error?.code ?? null })) }).toEqual({ context, videos: expected });

      // Each event once per video, whatever was repeated after the crashes.
      const database = await createDatabase({ url: `file:${join(dataDir, "service.db")}` });
      try {
        const rows = await database.db.select({ entityId: outbox.entityId, event: outbox.event }).from(outbox);
        for (const [i, id] of ids.entries()) {
          const names = rows.filter((r) => r.entityId === id).map((r) => r.event);
          const once = (event: string) => names.filter((n) => n === event).length;
          const completed = videos[i]!.status === "COMPLETED";
          expect({ context, id, uploaded: once("VIDEO_UPLOADED"), completed: once("VIDEO_TRANSCODING_COMPLETED"), failed: once("VIDEO_TRANSCODING_FAILED") }).toEqual({
            context,
            id,
            uploaded: 1,
            completed: completed ? 1 : 0,
            failed: completed ? 0 : 1,
          });
          // Announced once when it completed; a failed one may or may not have started (a bad medium fails at its probe).
          if (completed) expect(once("VIDEO_TRANSCODING_STARTED")).toBe(1);
          else expect(once("VIDEO_TRANSCODING_STARTED")).toBeLessThanOrEqual(1);
        }
      } finally {
        database.close();
      }
      rmSync(dataDir, { recursive: true, force: true });
    }),
    {
      // The two examples count in the runs: two random ones follow.
      numRuns: Number(process.env.CRASH_RUNS ?? 4),
      endOnFailure: true,
      // Always tried first: the crash the issue found (a failed row committed, the video not yet told), in either stage.
      examples: [[[{ fault: "work:after-failed:fetch-source" }, { fault: "work:after-failed:transcode" }]], [[{ killAfterMs: 1_500 }, { fault: "work:after-failed:transcode" }]]],
    },
  );
}, 900_000);
