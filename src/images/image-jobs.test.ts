import { describe, expect, test } from "bun:test";
import { createImageJobs, ImageQueueFull } from "./image-jobs.ts";

/** A job that runs until released, recording when it started. */
function gated(started: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { fn: () => (started.push(name), done.then(() => name)), release };
}

describe("image jobs", () => {
  test("one organization's burst does not starve another: slots go round robin, at most perOrg each", async () => {
    const jobs = createImageJobs({ total: 2, perOrg: 2, maxQueuedPerOrg: 100 });
    const started: string[] = [];
    const a = Array.from({ length: 10 }, (_, i) => gated(started, `a${i}`));
    const runs = a.map((g, i) => jobs.run("org_a", `a${i}`, g.fn));
    const b = gated(started, "b0");
    const bRun = jobs.run("org_b", "b0", b.fn);
    await Bun.sleep(0);
    expect(started).toEqual(["a0", "a1"]);
    a[0]!.release();
    await runs[0];
    await Bun.sleep(0);
    // The freed slot goes to the organization that waited, not to a's next cut.
    expect(started).toEqual(["a0", "a1", "b0"]);
    b.release();
    await bRun;
    for (const g of a) g.release();
    expect(await Promise.all(runs)).toEqual(a.map((_, i) => `a${i}`));
  });

  test("perOrg bounds one organization even with free slots; the same key runs once", async () => {
    const jobs = createImageJobs({ total: 4, perOrg: 1, maxQueuedPerOrg: 100 });
    const started: string[] = [];
    const x = gated(started, "x");
    const y = gated(started, "y");
    const first = jobs.run("org_a", "k1", x.fn);
    const same = jobs.run("org_a", "k1", y.fn);
    const other = jobs.run("org_a", "k2", y.fn);
    await Bun.sleep(0);
    expect(started).toEqual(["x"]);
    expect(jobs.stats()).toEqual({ running: 1, waiting: 1 });
    x.release();
    expect(await first).toBe("x");
    expect(await same).toBe("x");
    y.release();
    expect(await other).toBe("y");
  });

  test("a full queue of one organization is refused; others still queue", async () => {
    const jobs = createImageJobs({ total: 1, perOrg: 1, maxQueuedPerOrg: 2 });
    const started: string[] = [];
    const g = gated(started, "g");
    const held = [jobs.run("org_a", "a0", g.fn), jobs.run("org_a", "a1", g.fn), jobs.run("org_a", "a2", g.fn)];
    await Bun.sleep(0);
    expect(jobs.run("org_a", "a3", g.fn)).rejects.toBeInstanceOf(ImageQueueFull);
    const b = jobs.run("org_b", "b0", g.fn);
    g.release();
    await Promise.all([...held, b]);
  });
});
