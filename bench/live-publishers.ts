/**
 * The publisher side of bench/live.ts, in its own process: N RTMP publishers,
 * each pushing the fixture FLV looped at real-time pace for D seconds.
 * Prints one JSON line: how far behind real time the publishers fell.
 * Usage: bun bench/live-publishers.ts <seconds> <url> [url ...]
 */
import { join } from "node:path";
import { readFlvTags } from "../media/flv/flv-reader.ts";
import type { FlvTag } from "../media/flv/flv-tag.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";

const [secondsArg, ...urls] = process.argv.slice(2);
const seconds = Number(secondsArg);
const fixture = [...readFlvTags(new Uint8Array(await Bun.file(join(import.meta.dir, "../fixtures/live-360p-6s.flv")).arrayBuffer()))];
const media = fixture.filter((t) => t.type !== "data");
const loopMs = media[media.length - 1]!.timestamp + 40;
let maxLagMs = 0;
let bytes = 0;

async function* paced(offsetMs: number): AsyncGenerator<FlvTag> {
  const start = performance.now() + offsetMs;
  await Bun.sleep(offsetMs);
  for (let loop = 0; ; loop++) {
    for (const tag of loop === 0 ? fixture : media) {
      // Sequence headers repeat every loop; media timestamps keep growing.
      const ts = tag.timestamp + loop * loopMs;
      if (ts > seconds * 1000) return;
      const due = start + ts;
      const wait = due - performance.now();
      if (wait > 1) await Bun.sleep(wait);
      maxLagMs = Math.max(maxLagMs, performance.now() - due);
      bytes += tag.payload.byteLength;
      yield { ...tag, timestamp: ts };
    }
  }
}

const pubs = urls.map((url, i) => publish({ url, tags: paced((i * 37) % 1000), pace: "fast" }));
const results = await Promise.allSettled(pubs.map((p) => p.finished));
const failed = results.filter((r) => r.status === "rejected").length;
console.log(JSON.stringify({ publishers: urls.length, failed, maxLagMs, mbpsPerStream: (bytes * 8) / 1e6 / seconds / Math.max(1, urls.length) }));
