import { expect, test } from "bun:test";
import { coalesceReads } from "./coalesced-reads.ts";

/** A reader whose batches the test answers by hand, recording what each was asked. */
function manualReader() {
  const asked: string[][] = [];
  const answer: Array<(m: Map<string, string>) => void> = [];
  const reads = coalesceReads<string, string>((keys) => {
    asked.push(keys);
    return new Promise((resolve) => answer.push(resolve));
  });
  const answerAll = (i: number) => answer[i]!(new Map(asked[i]!.map((k) => [k, `row of ${k}`])));
  return { reads, asked, answerAll };
}

test("loads asked for in one turn go in one batch; each caller gets its own key's answer", async () => {
  const { reads, asked, answerAll } = manualReader();
  const loads = ["a", "b", "a", "c"].map((k) => reads.load(k));
  await Bun.sleep(0);
  expect(asked).toEqual([["a", "b", "c"]]);
  answerAll(0);
  expect(await Promise.all(loads)).toEqual(["row of a", "row of b", "row of a", "row of c"]);
  expect(reads.batches).toBe(1);
});

test("a load asked for after its batch was sent never joins it: it waits for a statement sent after it", async () => {
  const { reads, asked, answerAll } = manualReader();
  const first = reads.load("a");
  await Bun.sleep(0);
  const second = reads.load("a");
  await Bun.sleep(0);
  expect(asked).toEqual([["a"], ["a"]]);
  // Two batches on their way (the default): a third waits for one of them, then goes with everything asked since.
  const more = ["b", "c"].map((k) => reads.load(k));
  await Bun.sleep(0);
  expect(asked.length).toBe(2);
  answerAll(0);
  await first;
  await Bun.sleep(0);
  expect(asked[2]).toEqual(["b", "c"]);
  answerAll(1);
  answerAll(2);
  expect(await Promise.all([second, ...more])).toEqual(["row of a", "row of b", "row of c"]);
});

test("a failed batch fails each of its callers, and the next batch is read again", async () => {
  let fail = true;
  const reads = coalesceReads<string, string>(async (keys) => {
    if (fail) throw new Error("server gone");
    return new Map(keys.map((k) => [k, k.toUpperCase()]));
  });
  const failed = await Promise.allSettled([reads.load("a"), reads.load("b")]);
  expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  fail = false;
  expect(await reads.load("a")).toBe("A");
  // A key the statement did not find: undefined.
  const missing = coalesceReads<string, string>(async () => new Map());
  expect(await missing.load("nope")).toBeUndefined();
});
