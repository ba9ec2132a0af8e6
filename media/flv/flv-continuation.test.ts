import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { flvContinuation } from "./flv-continuation.ts";
import { readFlvTags } from "./flv-reader.ts";
import { createFlvWriter } from "./flv-writer.ts";
import { ffprobeJson } from "./test-helpers.ts";

setDefaultTimeout(120_000);

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");
const fixture = new Uint8Array(readFileSync(FIXTURE));
const dir = mkdtempSync(join(tmpdir(), "flv-continuation-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a recording cut mid-tag (kill -9) continues after its last whole tag: the cut tag goes, the appended tags follow, ffprobe reads one file", async () => {
  const path = join(dir, "cut.flv");
  const cut = 300_001;
  writeFileSync(path, fixture.subarray(0, cut));
  const whole = [...readFlvTags(fixture.subarray(0, cut))];
  const c = await flvContinuation(path);
  // readFlvTags also yields a last tag whose PreviousTagSize is missing; the continuation keeps only complete ones.
  expect(c!.tags === whole.length || c!.tags === whole.length - 1).toBe(true);
  expect(c!.offset).toBeLessThanOrEqual(cut);
  expect(c!.offset).toBeGreaterThan(cut - 40_000);
  expect(c!.lastTimestampMs).toBe(
    Math.max(
      ...whole
        .slice(0, c!.tags)
        .filter((t) => t.type !== "data")
        .map((t) => t.timestamp),
    ),
  );

  const writer = await createFlvWriter(path, { hasAudio: true, hasVideo: true, appendAt: c!.offset });
  const again = [...readFlvTags(fixture)].filter((t) => t.type !== "data");
  for (const t of again) await writer.write({ ...t, timestamp: c!.lastTimestampMs + 40 + t.timestamp });
  await writer.close();

  const all = [...readFlvTags(new Uint8Array(readFileSync(path)))];
  expect(all.length).toBe(c!.tags + again.length);
  // ffprobe reads the packets through the join (the file's onMetaData duration is the first half's encoder's).
  const packets = (await ffprobeJson(path, ["-show_entries", "packet=pts_time"])).packets as Array<{ pts_time: string }>;
  expect(Math.max(...packets.map((p) => Number(p.pts_time)))).toBeGreaterThan(c!.lastTimestampMs / 1000 + 5.5);
});

test("no file, or less than a header: nothing to continue", async () => {
  expect(await flvContinuation(join(dir, "missing.flv"))).toBeNull();
  writeFileSync(join(dir, "short.flv"), fixture.subarray(0, 5));
  expect(await flvContinuation(join(dir, "short.flv"))).toBeNull();
});

test("abandon(): what is still buffered is not written (the file is another process's now), and nothing more can be", async () => {
  const path = join(dir, "abandoned.flv");
  const writer = await createFlvWriter(path, { hasAudio: true, hasVideo: true, flushIntervalMs: 60_000 });
  const header = readFileSync(path).length;
  for (const t of [...readFlvTags(fixture)].slice(0, 20)) await writer.write(t);
  await writer.abandon();
  expect(readFileSync(path).length).toBe(header);
  expect(writer.write([...readFlvTags(fixture)][0]!)).rejects.toThrow("write after close");
});
