/**
 * The pool's promises: one job per worker, FIFO queue, kill-and-replace on
 * timeout or abort; a job borrows idle workers for its per-rendition runs.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createWasmTranscoder } from "../create-wasm-transcoder.ts";
import { SHORT_LADDER, fixture, removeDir, tempOutDir } from "../test-support/fixtures.ts";
import { TranscodeError } from "../transcode-error.ts";
import type { Transcoder, TranscodeJob } from "../types.ts";
import { createWasmWorkerPool, type WasmLease } from "./wasm-worker-pool.ts";

setDefaultTimeout(120_000);

const dirs: string[] = [];
const open: Transcoder[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
  for (const d of dirs.splice(0)) removeDir(d);
});

function setup(workers: number) {
  const events: Array<Record<string, unknown>> = [];
  const t = createWasmTranscoder({ workers, logger: (o) => events.push({ ...o, at: performance.now() }) });
  open.push(t);
  return { t, events };
}
function job(input = "av-360p-2s.mp4", ladder = SHORT_LADDER.slice(0, 1)): TranscodeJob {
  const outDir = tempOutDir("pool");
  dirs.push(outDir);
  return { input: fixture(input), outDir, ladder, downloads: [], segmentSeconds: 2 };
}
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "resolved";
  } catch (e) {
    return e instanceof TranscodeError ? e.code : `unexpected ${String(e)}`;
  }
}

describe("wasm worker pool", () => {
  test("a tiny timeout terminates the worker with TIMEOUT and the pool still works", async () => {
    const { t, events } = setup(1);
    const started = performance.now();
    expect(await codeOf(t.transcode(job("av-720p-3s.mp4", SHORT_LADDER), { timeoutMs: 700 }))).toBe("TIMEOUT");
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(events.some((e) => e.event === "wasm.worker_terminated" && String(e.reason).includes("TIMEOUT"))).toBe(true);
    const next = await t.transcode(job(), { timeoutMs: 60_000 });
    expect(next.renditions.map((r) => r.quality)).toEqual(["144p"]);
  }, 120_000);

  test("aborting a running job rejects with CANCELLED and replaces the worker", async () => {
    const { t, events } = setup(1);
    const c = new AbortController();
    const running = t.transcode(job("av-720p-3s.mp4", SHORT_LADDER), { signal: c.signal });
    setTimeout(() => c.abort(), 300);
    expect(await codeOf(running)).toBe("CANCELLED");
    expect(events.filter((e) => e.event === "wasm.worker_terminated")).toHaveLength(1);
    expect(await t.probe(fixture("av-360p-2s.mp4"))).toMatchObject({ height: 360 });
  }, 120_000);

  test("one job per worker: the second job waits for the first; a queued job can be cancelled", async () => {
    const { t, events } = setup(1);
    const first = t.transcode(job());
    const c = new AbortController();
    const queued = t.transcode(job(), { signal: c.signal });
    const second = t.transcode(job("av-odd-322x242-2s.mp4"));
    c.abort();
    expect(await codeOf(queued)).toBe("CANCELLED");
    await Promise.all([first, second]);
    const spans = ["started", "finished"].map((k) => events.filter((e) => e.event === `transcode.${k}`).map((e) => e.at as number));
    const [starts, ends] = spans as [number[], number[]];
    expect(starts).toHaveLength(2);
    expect(starts[1]!).toBeGreaterThanOrEqual(ends[0]!);
    // The cancelled job never reached a worker.
    expect(events.filter((e) => e.event === "transcode.started")).toHaveLength(2);
  }, 60_000);

  test("two workers run two jobs at once", async () => {
    const { t, events } = setup(2);
    await Promise.all([t.transcode(job()), t.transcode(job())]);
    const starts = events.filter((e) => e.event === "transcode.started").map((e) => e.at as number);
    const ends = events.filter((e) => e.event === "transcode.finished").map((e) => e.at as number);
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
    expect(events.filter((e) => e.event === "wasm.worker_loaded")).toHaveLength(2);
  }, 60_000);

  test("close() cancels a job mid-run", async () => {
    const { t } = setup(1);
    await t.probe(fixture("av-360p-2s.mp4"));
    const running = codeOf(t.transcode(job("av-720p-3s.mp4", SHORT_LADDER)));
    await Bun.sleep(300);
    await t.close();
    expect(await running).toBe("CANCELLED");
  }, 120_000);

  test("close() cancels jobs waiting for a worker to load and queued jobs", async () => {
    const { t } = setup(1);
    const whileLoading = codeOf(t.transcode(job()));
    const queued = codeOf(t.transcode(job()));
    await Bun.sleep(100);
    await t.close();
    expect(await whileLoading).toBe("CANCELLED");
    expect(await queued).toBe("CANCELLED");
    expect(await codeOf(t.transcode(job()))).toBe("CANCELLED");
  }, 120_000);

  test("a loaded core is reused between jobs", async () => {
    const { t, events } = setup(1);
    await t.probe(fixture("av-360p-2s.mp4"));
    await t.transcode(job());
    await t.probe(fixture("audio-only-2s.m4a"));
    expect(events.filter((e) => e.event === "wasm.worker_loaded")).toHaveLength(1);
  }, 120_000);

  test("a job runs its renditions on every idle worker at once", async () => {
    const { t, events } = setup(2);
    const progress: number[] = [];
    const r = await t.transcode(job("av-720p-3s.mp4", SHORT_LADDER), { onProgress: (p) => progress.push(p) });
    expect(r.renditions.map((x) => x.quality)).toEqual(["144p", "240p", "360p"]);
    const runs = events.filter((e) => e.event === "wasm.run_finished" && e.tool === "ffmpeg").map((e) => ({ slot: e.slot as number, start: (e.at as number) - (e.ms as number), end: e.at as number }));
    // One run per rendition, or in the chunked layout (2 workers: chunked-runs.ts) one per chunk, the audio run and a join per rendition.
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(new Set(runs.map((x) => x.slot))).toEqual(new Set([0, 1]));
    const [a, b] = [runs.find((x) => x.slot === 0)!, runs.find((x) => x.slot === 1)!];
    expect(Math.max(a.start, b.start)).toBeLessThan(Math.min(a.end, b.end));
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(100);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
  }, 60_000);

  test("a job that waits while another uses both workers starts before that job ends", async () => {
    const { t, events } = setup(2);
    const first = t.transcode(job("av-720p-3s.mp4", SHORT_LADDER));
    // Let the first job take both workers (its own and a borrowed one).
    while (events.filter((e) => e.event === "transcode.started").length < 1) await Bun.sleep(10);
    const second = t.transcode(job());
    await Promise.all([first, second]);
    const at = (event: string, n: number) => events.filter((e) => e.event === event)[n]!.at as number;
    expect(at("transcode.started", 1)).toBeLessThan(at("transcode.finished", 0));
  }, 60_000);

  test("borrowed workers go to waiting jobs first, then to borrowers, each in FIFO order", async () => {
    const pool = createWasmWorkerPool({ size: 1 });
    try {
      const order: string[] = [];
      const home = await pool.acquire();
      const track = (name: string, p: Promise<WasmLease>) => p.then((l) => (order.push(name), l));
      const b1 = track("borrow-1", pool.borrow());
      const j1 = track("job-1", pool.acquire());
      const b2 = track("borrow-2", pool.borrow());
      const j2 = track("job-2", pool.acquire());
      home.release();
      (await j1).release();
      (await j2).release();
      (await b1).release();
      (await b2).release();
      expect(order).toEqual(["job-1", "job-2", "borrow-1", "borrow-2"]);
      // A borrow is served at once when a worker is idle.
      const c = new AbortController();
      const idle = await pool.borrow(c.signal);
      idle.release();
    } finally {
      await pool.close();
    }
  });

  test("cancelling a job that runs on two workers terminates both and the pool recovers", async () => {
    const { t, events } = setup(2);
    const c = new AbortController();
    const running = t.transcode(job("av-720p-3s.mp4", SHORT_LADDER), { signal: c.signal });
    while (events.filter((e) => e.event === "wasm.worker_loaded").length < 2) await Bun.sleep(10);
    await Bun.sleep(200);
    c.abort();
    expect(await codeOf(running)).toBe("CANCELLED");
    expect(
      events
        .filter((e) => e.event === "wasm.worker_terminated")
        .map((e) => e.slot)
        .sort(),
    ).toEqual([0, 1]);
    const again = await t.transcode(job(), { timeoutMs: 60_000 });
    expect(again.renditions.map((r) => r.quality)).toEqual(["144p"]);
  }, 60_000);
});
