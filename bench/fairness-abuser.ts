/**
 * The hostile tenant of bench/fairness.ts, in its own process so its sockets
 * and timers do not share the measuring process's event loop. With its own API
 * key it tries every way one organization could degrade the others:
 *   - RTMP slowloris: many unauthenticated sockets from several loopback
 *     addresses, each trickling a byte every few seconds, reopened when closed;
 *   - slot hoarding: POST /livestreams/ and /livestreams/schedule/ as fast as
 *     it is allowed (and beyond: refused requests are the cheap path);
 *   - stalled sources: videos whose source_url answers headers and then one
 *     byte a second;
 *   - hanging receivers: as many webhook endpoints as it may register, all
 *     pointing at an HTTPS server that never answers.
 * Runs until killed; prints one JSON line of counts every 5 s.
 * Usage: bun bench/fairness-abuser.ts <base_url> <rtmp_port> <api_key> <hanging_https_url> <trickle_url>
 */
import { connect } from "node:net";

const [base, rtmpPortArg, apiKey, hangingUrl, trickleUrl] = process.argv.slice(2);
if (!base || !rtmpPortArg || !apiKey || !hangingUrl || !trickleUrl) throw new Error("usage: fairness-abuser.ts <base_url> <rtmp_port> <api_key> <hanging_https_url> <trickle_url>");
const rtmpPort = Number(rtmpPortArg);
const SOCKETS = 600;
const ADDRESSES = 12; // 127.0.0.2 … 127.0.0.13: the server sees distinct client IPs

const counts = { rtmpOpen: 0, rtmpOpened: 0, rtmpClosedByServer: 0, streamsCreated: 0, streamsRefused: 0, sourcesRegistered: 0, endpointsRegistered: 0, endpointsRefused: 0, requests: 0 };

async function api(path: string, json?: unknown): Promise<Response> {
  counts.requests++;
  return fetch(`${base}/api/public/v1${path}`, {
    method: json === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${apiKey}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  }).catch(() => new Response(null, { status: 599 }));
}

// Slowloris: the C0 byte of a handshake, then one byte of C1 every 3 s, forever.
function slowSocket(i: number) {
  const socket = connect({ host: "127.0.0.1", port: rtmpPort, localAddress: `127.0.0.${2 + (i % ADDRESSES)}` });
  let timer: ReturnType<typeof setInterval> | undefined;
  socket.on("connect", () => {
    counts.rtmpOpen++;
    counts.rtmpOpened++;
    socket.write(Buffer.from([3]));
    timer = setInterval(() => socket.write(Buffer.from([0])), 3000);
  });
  socket.on("error", () => undefined);
  socket.on("close", (hadError) => {
    if (timer) {
      clearInterval(timer);
      counts.rtmpOpen--;
      counts.rtmpClosedByServer++;
    }
    void hadError;
    setTimeout(() => slowSocket(i), 1000);
  });
}
for (let i = 0; i < SOCKETS; i++) slowSocket(i);

// Hanging receivers: register until refused (the per-organization cap).
(async () => {
  for (let i = 0; i < 300; i++) {
    const res = await api("/webhooks/", { url: `${hangingUrl}/${i}`, events: ["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_TRANSCODING_FAILED", "LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"] });
    if (res.status === 201) counts.endpointsRegistered++;
    else counts.endpointsRefused++;
  }
})();

// Slot hoarding and stalled sources, paced at 40 requests/s in all.
let n = 0;
setInterval(async () => {
  n++;
  const inAYear = new Date(Date.now() + 60_000 + n * 1000).toISOString();
  const [a, b, c] = await Promise.all([
    api("/livestreams/", { title: `hoard ${n}` }),
    api("/livestreams/schedule/", { title: `hoard later ${n}`, scheduled_at: inAYear }),
    api("/videos/", { source_url: `${trickleUrl}?n=${n}`, title: `stalled ${n}` }),
  ]);
  for (const r of [a, b]) {
    if (r.status === 201) counts.streamsCreated++;
    else counts.streamsRefused++;
  }
  if (c.status === 201) counts.sourcesRegistered++;
}, 75);

setInterval(() => console.log(JSON.stringify(counts)), 5000);
