import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type Cluster, startCluster } from "./support/cluster.ts";
import { waitFor } from "./support/events.ts";
import { ok } from "./support/api.ts";

/**
 * Issue 24, item 5: whether a broadcast is live is known inside the ingest
 * process, not by fetching our own hls_url over HTTP. The ingest process's
 * BASE_URL names an address it cannot reach (port 1 on loopback refuses);
 * the stream still goes LIVE once its first segment is stored, and other
 * processes serve its HLS from the bucket.
 */

const hasFfmpeg = Bun.which("ffmpeg") !== null;
const FIXTURE = join(import.meta.dir, "..", "fixtures", "live-360p-6s.flv");
const UNREACHABLE = "http://127.0.0.1:1";

let cluster: Cluster;

function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

beforeAll(async () => {
  cluster = await startCluster({ name: "live-no-base-url" });
}, 60_000);

afterAll(() => cluster?.stop(), 60_000);

test.skipIf(!hasFfmpeg)(
  "a stream published to a process whose BASE_URL it cannot reach goes LIVE; another process serves its HLS",
  async () => {
    // A fixed PORT: with PORT=0 the service names its own address as BASE_URL.
    const ingest = await cluster.spawn({ PORT: String(freePort()), BASE_URL: UNREACHABLE });
    const other = await cluster.spawn();
    const created = await ok(ingest.api("/livestreams/", { method: "POST", json: { title: "Unreachable BASE_URL" } }), "createLivestream");
    const s = created.data.stream;
    expect(s.hls_url.startsWith(`${UNREACHABLE}/live/`)).toBe(true);
    expect(s.status).toBe("READY_TO_STREAM");

    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-stream_loop", "-1", "-i", FIXTURE, "-c", "copy", "-f", "flv", s.rtmp_url], { stdout: "ignore", stderr: "ignore" });
    try {
      const live = await waitFor(
        async () => {
          const r = await ok(other.api(`/livestreams/${s.id}/`), "getLivestream");
          return r.data?.stream?.status === "LIVE" ? r.data.stream : undefined;
        },
        { timeoutMs: 60_000, what: "the stream LIVE" },
      );
      expect(live.status).toBe("LIVE");
      // What the ingest process judged playable, a viewer gets from another process.
      const atOther = new URL(s.hls_url);
      atOther.host = new URL(other.base).host;
      const playlist = await fetch(atOther);
      expect(playlist.status).toBe(200);
      expect(await playlist.text()).toContain("#EXTINF");
    } finally {
      ff.kill("SIGKILL");
      await ff.exited;
    }
  },
  180_000,
);
