/**
 * WebRTC (issue 14): glass-to-glass latency and viewers per core.
 *
 * 1. Latency. The publisher burns its clock into every picture (bench/webrtc-clock.ts:
 *    32 black/white blocks = Date.now() mod 2^24 + a check); the viewer, in
 *    the same Chromium page (same clock, no background-tab throttling), reads
 *    it back from each presented frame (requestVideoFrameCallback → canvas →
 *    getImageData) and keeps Date.now() − the time read.
 *    - WHIP: a canvas drawing the clock at 30 fps (`captureStream(30)`) + an
 *      oscillator, published by WHIP from Chromium (H.264 42e01f).
 *    - RTMP: Bun draws the same clock into raw gray frames at 30 fps and pipes
 *      them to ffmpeg (libx264 zerolatency, 1 s GOP, + AAC) pushing to rtmp_url.
 *    Each stream (latency LOW) is watched at once by WHEP (audio + video, as a
 *    player would; and a second viewer with video only, which Chromium need
 *    not hold back for lip sync) and by hls.js (`lowLatencyMode`, its
 *    defaults otherwise: three segments behind the edge).
 * 2. Viewers per core at ~1 Mbps. ffmpeg pushes one RTMP stream (x264 CBR
 *    1 Mbit/s + AAC); werift peers in child processes (bench/webrtc-viewers.ts)
 *    play it by WHEP, N stepping up. Per N: CPU of the mediasoup worker
 *    (/proc/<pid>/stat), of the service process (this one: the service runs
 *    in process), of the RTMP→RTP relay ffmpeg, and of the peers; the share
 *    of viewers receiving ≥ 90 % of the best-served viewer of the same window,
 *    and the mean against the source (the RTP mediasoup received from the
 *    relay in that window, producers' getStats, × a lone viewer's SRTP/RTCP
 *    overhead). A step holds when every viewer
 *    connected, every one got ≥ 90 % of the best and the mean ≥ 80 % of the
 *    source; stepping stops at the first that does not.
 *
 * Usage: npm run bench:webrtc [-- --part latency|viewers --seconds 20 --steps 50,100,150,200,250,300,350,400 --window 8]
 * Needs /usr/bin/chromium, ffmpeg and the mediasoup worker (npm run setup:webrtc).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as mediasoup from "mediasoup";
import type { Page } from "playwright-core";
import { webrtcAvailability } from "../src/webrtc/availability.ts";
import { hasChromium } from "../test/support/browser.ts";
import { streamIn } from "../test/support/streams.ts";
import { startTestService } from "../test/support/test-service.ts";
import { startWebrtcBrowser, whepPlay } from "../test/support/webrtc-pages.ts";
import { CLOCK_PAGE_JS, drawClockGray, H, W } from "./webrtc-clock.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : d;
};
const part = arg("part", "all");
const seconds = Number(arg("seconds", "20"));
const steps = arg("steps", "50,100,150,200,250,300,350,400").split(",").map(Number);
const windowS = Number(arg("window", "8"));
const CHILDREN = 2;

if (!hasChromium || !webrtcAvailability().available || !Bun.which("ffmpeg")) {
  console.log("bench:webrtc skipped: needs /usr/bin/chromium, ffmpeg and the mediasoup worker (npm run setup:webrtc)");
  process.exit(0);
}

const t = await startTestService({
  env: { WEBRTC_PORT: "0", WEBRTC_MAX_VIEWERS_PER_STREAM: "100000", LIVE_RECONNECT_MS: "500", LIVE_SLOTS: "1000", LIVE_SLOTS_PER_ORG: "1000" },
});
// Recordings are registered, not transcoded: the transcoder would take the cores being measured.
t.service.policies.transcode.concurrency = 0;

interface StreamData {
  id: string;
  whip_url: string;
  whep_url: string;
  hls_url: string;
  rtmp_url: string;
  stream_key: string;
}
async function createStream(title: string, latency: "LOW" | "NORMAL"): Promise<StreamData> {
  const res = await t.api("/livestreams/", { method: "POST", json: { title, latency } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`create stream: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { stream: StreamData } }).data.stream;
}

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};

// ---------- 1. glass-to-glass latency ----------

/** The page side beside CLOCK_PAGE_JS: the canvas published by WHIP, hls.js playing a URL. */
const PAGE_JS = `
async function settled(pc) {
  if (pc.iceGatheringState === "complete") return;
  await new Promise((r) => { pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && r()); setTimeout(r, 3000); });
}
window.whipCanvas = async (url, bearer) => {
  const track = clockCanvas().captureStream(30).getVideoTracks()[0];
  // Keep the resolution under load (a smaller picture still decodes, but a sharper one reads better).
  track.contentHint = "detail";
  const ac = new AudioContext();
  const osc = ac.createOscillator();
  const dst = ac.createMediaStreamDestination();
  osc.connect(dst); osc.start();
  const pc = new RTCPeerConnection();
  const tv = pc.addTransceiver(track, { direction: "sendonly" });
  const codecs = RTCRtpSender.getCapabilities("video").codecs;
  tv.setCodecPreferences([...codecs.filter((c) => c.mimeType === "video/H264" && /packetization-mode=1/.test(c.sdpFmtpLine || "") && /profile-level-id=42e01f/.test(c.sdpFmtpLine || "")), ...codecs.filter((c) => c.mimeType === "video/rtx")]);
  pc.addTransceiver(dst.stream.getAudioTracks()[0], { direction: "sendonly" });
  await pc.setLocalDescription(await pc.createOffer());
  await settled(pc);
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/sdp", authorization: "Bearer " + bearer }, body: pc.localDescription.sdp });
  const body = await res.text();
  if (res.status === 201) await pc.setRemoteDescription({ type: "answer", sdp: body });
  window.publisher = { pc, location: res.headers.get("location") };
  return { status: res.status, body: res.status === 201 ? "" : body };
};
// A second WHEP viewer taking video only: without an audio track to keep in sync, Chromium plays each
// frame as soon as its jitter buffer allows (the difference to the first shows what lip sync costs).
window.whepVideoOnly = async (url) => {
  const pc = new RTCPeerConnection();
  pc.addTransceiver("video", { direction: "recvonly" });
  const video = document.createElement("video");
  video.muted = true; video.autoplay = true; video.playsInline = true;
  document.body.append(video);
  pc.addEventListener("track", (e) => { video.srcObject = new MediaStream([e.track]); video.play().catch(() => undefined); });
  await pc.setLocalDescription(await pc.createOffer());
  await settled(pc);
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/sdp" }, body: pc.localDescription.sdp });
  const body = await res.text();
  if (res.status === 201) await pc.setRemoteDescription({ type: "answer", sdp: body });
  window.videoOnly = video;
  return { status: res.status, body: res.status === 201 ? "" : body };
};
window.playHls = (url, low) => {
  const video = document.createElement("video");
  video.muted = true; video.autoplay = true; video.playsInline = true;
  document.body.append(video);
  const hls = new Hls({ lowLatencyMode: low });
  hls.on(Hls.Events.ERROR, (_e, d) => { if (d.fatal) { window.hlsFatal = d.details; hls.startLoad(); } });
  hls.loadSource(url);
  hls.attachMedia(video);
  video.play().catch(() => undefined);
  window.hlsVideo = video;
};
window.startClocks = () => {
  window.clocks = { whep: readClock(window.viewer.video), vonly: readClock(window.videoOnly), hls: readClock(window.hlsVideo) };
};
window.resetClocks = () => { for (const c of Object.values(window.clocks)) { c.lat = []; c.unread = 0; c.frames = 0; } };
window.clockCounts = () => ({ whep: window.clocks.whep.lat.length, vonly: window.clocks.vonly.lat.length, hls: window.clocks.hls.lat.length, hlsFatal: window.hlsFatal || null });
`;

interface ClockReading {
  lat: number[];
  unread: number;
  frames: number;
}

/** Plays `s` by WHEP and by HLS in `page`, waits until both show readable clocks, then reads `seconds` of frames. */
async function measureLatency(page: Page, s: StreamData): Promise<{ whep: ClockReading; vonly: ClockReading; hls: ClockReading }> {
  const played = await whepPlay(page, s.whep_url);
  if (played.status !== 201) throw new Error(`WHEP ${played.status}: ${played.body}`);
  const vonly = await page.evaluate(([u]) => (globalThis as any).whepVideoOnly(u), [s.whep_url] as const);
  if (vonly.status !== 201) throw new Error(`WHEP (video only) ${vonly.status}: ${vonly.body}`);
  await page.evaluate(([u]) => (globalThis as any).playHls(u, true), [s.hls_url] as const);
  await page.evaluate(() => (globalThis as any).startClocks());
  const until = Date.now() + 40_000;
  for (;;) {
    const c = await page.evaluate(() => (globalThis as any).clockCounts());
    if (c.whep > 30 && c.vonly > 30 && c.hls > 30) break;
    if (Date.now() > until) throw new Error(`viewers did not show the clock within 40 s: ${JSON.stringify(c)}`);
    await Bun.sleep(500);
  }
  // hls.js seeks to its live edge once it starts: skip those first seconds.
  await Bun.sleep(3000);
  await page.evaluate(() => (globalThis as any).resetClocks());
  await Bun.sleep(seconds * 1000);
  return page.evaluate(() => JSON.parse(JSON.stringify((globalThis as any).clocks)));
}

/** Bun draws the clock into 640×360 gray frames at 30 fps and ffmpeg pushes them by RTMP (+ a tone as AAC). */
function rtmpClockPublisher(url: string) {
  const ff = Bun.spawn(
    [
      "ffmpeg",
      ...["-hide_banner", "-loglevel", "error"],
      ...["-f", "rawvideo", "-pix_fmt", "gray", "-s", `${W}x${H}`, "-r", "30", "-i", "-"],
      ...["-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"],
      ...["-map", "0:v", "-map", "1:a"],
      ...["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-b:v", "800k", "-maxrate", "800k", "-bufsize", "400k", "-pix_fmt", "yuv420p"],
      ...["-c:a", "aac", "-b:a", "64k", "-f", "flv", url],
    ],
    { stdin: "pipe", stdout: "ignore", stderr: "inherit" },
  );
  let running = true;
  const loop = (async () => {
    const frame = new Uint8Array(W * H);
    const t0 = performance.now();
    for (let n = 0; running; n++) {
      const due = t0 + (n * 1000) / 30;
      const wait = due - performance.now();
      if (wait > 1) await Bun.sleep(wait);
      drawClockGray(frame, Date.now(), n);
      ff.stdin.write(frame);
      await ff.stdin.flush();
    }
  })();
  return {
    async stop() {
      running = false;
      await loop.catch(() => undefined);
      await Promise.resolve(ff.stdin.end()).catch(() => undefined);
      ff.kill("SIGINT");
      await ff.exited;
    },
  };
}

type Row = { path: string; r: ClockReading };
async function latencyPart(): Promise<Row[]> {
  const b = await startWebrtcBrowser();
  const rows: Row[] = [];
  const newPage = async () => {
    const page = await b.page();
    await page.addScriptTag({ content: CLOCK_PAGE_JS + PAGE_JS });
    await page.addScriptTag({ path: join(import.meta.dir, "..", "node_modules", "hls.js", "dist", "hls.min.js") });
    return page;
  };
  try {
    // WHIP → WHEP and WHIP → HLS.
    const whip = await createStream("bench WHIP", "LOW");
    const page = await newPage();
    const pub = await page.evaluate(([u, k]) => (globalThis as any).whipCanvas(u, k), [whip.whip_url, whip.stream_key] as const);
    if (pub.status !== 201) throw new Error(`WHIP ${pub.status}: ${pub.body}`);
    await streamIn(t, whip.id, ["LIVE"], 30_000);
    const w = await measureLatency(page, whip);
    rows.push({ path: "WHIP → WHEP", r: w.whep }, { path: "  video only", r: w.vonly }, { path: "WHIP → HLS", r: w.hls });
    const loc = await page.evaluate(() => (globalThis as any).publisher.location);
    await fetch(new URL(loc, whip.whip_url), { method: "DELETE" });
    await page.close();

    // RTMP → WHEP and RTMP → HLS.
    const rtmp = await createStream("bench RTMP", "LOW");
    const pusher = rtmpClockPublisher(rtmp.rtmp_url);
    try {
      await streamIn(t, rtmp.id, ["LIVE"], 30_000);
      const page2 = await newPage();
      const r = await measureLatency(page2, rtmp);
      rows.push({ path: "RTMP → WHEP", r: r.whep }, { path: "  video only", r: r.vonly }, { path: "RTMP → HLS", r: r.hls });
      await page2.close();
    } finally {
      await pusher.stop();
    }
  } finally {
    await b.close();
  }
  return rows;
}

// ---------- 2. viewers per core ----------

/** utime + stime of a process in ms (/proc/<pid>/stat, 100 ticks a second), or 0 once it is gone. */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}
/** The kernel's UDP receive-buffer drops so far (system-wide; on loopback both ends' sockets count). */
function udpDrops(): number {
  const lines = readFileSync("/proc/net/snmp", "utf8")
    .split("\n")
    .filter((l) => l.startsWith("Udp:"));
  const [head, vals] = [lines[0]!.split(/\s+/), lines[1]!.split(/\s+/)];
  return Number(vals[head.indexOf("RcvbufErrors")]);
}
/** Receive-buffer drops of the sockets bound to `port` (/proc/net/udp: the last column), e.g. the worker's WebRtcServer. */
function portDrops(port: number): number {
  let n = 0;
  for (const l of readFileSync("/proc/net/udp", "utf8").split("\n").slice(1)) {
    const f = l.trim().split(/\s+/);
    if (f.length > 12 && Number.parseInt(f[1]!.split(":")[1]!, 16) === port) n += Number(f.at(-1));
  }
  return n;
}
/** Direct children of this process whose command name starts with `comm`. */
function children(comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && name.startsWith(comm)) out.push(Number(d));
    } catch {}
  }
  return out;
}

/**
 * The RTP that reaches mediasoup from the RTMP relay: the producers of every
 * PlainTransport, found through mediasoup's observer (the service creates its
 * worker lazily, after this is set up). What the fan-out had to send in a window.
 */
const sourceProducers = new Set<mediasoup.types.Producer>();
mediasoup.observer.on("newworker", (w) =>
  w.observer.on("newrouter", (r) =>
    r.observer.on("newtransport", (tr) => {
      if (tr.type !== "plain") return;
      tr.observer.on("newproducer", (p) => {
        sourceProducers.add(p);
        p.observer.on("close", () => sourceProducers.delete(p));
      });
    }),
  ),
);
async function sourceBytes(): Promise<number> {
  let n = 0;
  for (const p of sourceProducers) for (const st of await p.getStats().catch(() => [])) n += st.byteCount ?? 0;
  return n;
}

/** One viewers process (bench/webrtc-viewers.ts) and its line protocol. */
function viewerProcess(whepUrl: string) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "webrtc-viewers.ts"), whepUrl], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let buf = "";
  const dec = new TextDecoder();
  async function line(): Promise<any> {
    for (;;) {
      const i = buf.indexOf("\n");
      if (i >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        return JSON.parse(l);
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("viewers process ended");
      buf += dec.decode(value);
    }
  }
  return {
    pid: proc.pid,
    async send(cmd: string): Promise<any> {
      proc.stdin.write(`${cmd}\n`);
      await proc.stdin.flush();
      return line();
    },
    async quit() {
      await this.send("quit").catch(() => undefined);
      await proc.exited;
    },
  };
}

/** Every viewer connected and got its stream: ≥ 90 % of the best-served one, and together ≥ 80 % of the source. */
const holds = (r: ViewerRow) => r.failed === 0 && r.ok === r.n && r.ofSource >= 0.8;

interface ViewerRow {
  n: number;
  failed: number;
  ok: number;
  meanKbps: number;
  workerPct: number;
  servicePct: number;
  relayPct: number;
  peersPct: number;
  udpDrops: number;
  /** Of those, on the worker's WebRtcServer port (the rest: the peers' sockets, or other programs'). */
  workerDrops: number;
  sentKbps: number;
  /** The viewers' mean rate over the source's (the RTP mediasoup got from the relay in the window, × the lone viewer's SRTP overhead). */
  ofSource: number;
  /** WHEP sessions the service holds for the stream, and peers whose connection is "connected", after the window. */
  serverViewers: number;
  peersConnected: number;
}

async function viewersPart(): Promise<{ rows: ViewerRow[]; expectedKbps: number; sentKbpsCal: number; overhead: number; verifiedRtp: number }> {
  const s = await createStream("bench viewers", "NORMAL");
  // x264 CBR (filler included): the same ~1 Mbit/s every second, so a viewer's share is comparable across windows.
  const ff = Bun.spawn(
    [
      "ffmpeg",
      ...["-hide_banner", "-loglevel", "error", "-re"],
      ...["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"],
      ...["-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"],
      ...["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "60", "-pix_fmt", "yuv420p"],
      ...["-b:v", "900k", "-minrate", "900k", "-maxrate", "900k", "-bufsize", "900k", "-x264-params", "nal-hrd=cbr"],
      ...["-c:a", "aac", "-b:a", "64k", "-f", "flv", "-progress", "pipe:1", "-stats_period", "0.5", s.rtmp_url],
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  // What the publisher really sent (FLV bytes, from -progress): on a loaded machine ffmpeg itself can fall
  // behind real time, and then every viewer gets less through no fault of the server.
  let sentBytes = 0;
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of ff.stdout) {
      const m = [...dec.decode(chunk).matchAll(/total_size=(\d+)/g)].at(-1);
      if (m) sentBytes = Number(m[1]);
    }
  })();
  const procs = Array.from({ length: CHILDREN }, () => viewerProcess(s.whep_url));
  try {
    await streamIn(t, s.id, ["LIVE"], 30_000);
    // A lone viewer first: what every viewer should get (and the relay and worker start).
    const first = await procs[0]!.send("add 1");
    if (first.failed) throw new Error(`first WHEP viewer failed: ${first.errors.join("; ")}`);
    // The relay starts at the next keyframe (2 s GOP): measure once it runs.
    await Bun.sleep(4000);
    const sent0 = sentBytes;
    const src0 = await sourceBytes();
    const cal = await procs[0]!.send(`measure ${windowS}`);
    const expectedKbps = (cal.bytes[0] * 8) / cal.seconds / 1000;
    const sentKbpsCal = ((sentBytes - sent0) * 8) / cal.seconds / 1000;
    // SRTP + RTCP bytes a viewer receives per RTP byte the relay gave mediasoup.
    const overhead = cal.bytes[0] / Math.max(1, (await sourceBytes()) - src0);
    const worker = children("mediasoup-work")[0];
    if (!worker) throw new Error("mediasoup worker process not found among this process's children");
    const rtcPort = (await t.service.rtc.ports())?.udp ?? 0;

    const rows: ViewerRow[] = [];
    let have = 1;
    let failed = 0;
    let verifiedRtp = cal.verifiedRtp;
    if (!sourceProducers.size) throw new Error("no producer on a PlainTransport seen through mediasoup's observer");
    for (const n of steps) {
      const more = n - have;
      const added = await Promise.all(procs.map((p, i) => p.send(`add ${Math.floor(more / CHILDREN) + (i < more % CHILDREN ? 1 : 0)}`)));
      for (const a of added) {
        failed += a.failed;
        if (a.failed) console.log(`  ${a.failed} viewer(s) failed to connect: ${a.errors.join("; ")}`);
      }
      have = n;
      await Bun.sleep(2000);
      const relays = children("ffmpeg").filter((pid) => pid !== ff.pid);
      const c0 = { w: procCpuMs(worker), s: process.cpuUsage(), r: relays.map(procCpuMs), p: procs.map((p) => procCpuMs(p.pid)), u: udpDrops(), wd: portDrops(rtcPort) };
      const t0 = performance.now();
      const sentBefore = sentBytes;
      const srcBefore = await sourceBytes();
      const ms = await Promise.all(procs.map((p) => p.send(`measure ${windowS}`)));
      const wall = performance.now() - t0;
      const sentKbps = ((sentBytes - sentBefore) * 8) / (wall / 1000) / 1000;
      // What mediasoup received from the relay in this window, as a viewer receives it (the publisher and
      // the relay fall behind now and then on a loaded machine: then everyone gets less, not the fan-out's doing).
      const dueKbps = (((await sourceBytes()) - srcBefore) * overhead * 8) / (wall / 1000) / 1000;
      const su = process.cpuUsage(c0.s);
      const pct = (cpuMs: number) => (cpuMs / wall) * 100;
      const rates = ms.flatMap((m) => (m.bytes as number[]).map((b) => (b * 8) / m.seconds / 1000));
      // The fan-out's share: every viewer against the best-served one of the same window, which shows
      // what reached mediasoup; and the whole against the source (a uniform shortfall).
      const best = Math.max(...rates);
      verifiedRtp = Math.max(verifiedRtp, ...ms.map((m) => m.verifiedRtp));
      rows.push({
        n: rates.length,
        failed,
        ok: rates.filter((r) => r >= 0.9 * best).length,
        ofSource: rates.reduce((a, b) => a + b, 0) / Math.max(1, rates.length) / dueKbps,
        sentKbps,
        meanKbps: rates.reduce((a, b) => a + b, 0) / Math.max(1, rates.length),
        workerPct: pct(procCpuMs(worker) - c0.w),
        servicePct: pct((su.user + su.system) / 1000),
        relayPct: pct(relays.reduce((a, pid, i) => a + procCpuMs(pid) - c0.r[i]!, 0)),
        peersPct: pct(procs.reduce((a, p, i) => a + procCpuMs(p.pid) - c0.p[i]!, 0)),
        udpDrops: udpDrops() - c0.u,
        workerDrops: portDrops(rtcPort) - c0.wd,
        serverViewers: t.service.rtc.viewerCount(s.id),
        peersConnected: ms.reduce((a, m) => a + m.connected, 0),
      });
      const r = rows.at(-1)!;
      console.log(
        `  N=${r.n}${failed ? ` (+${failed} failed)` : ""}: ${r.ok}/${r.n} at ≥ 90 % of the best (mean ${r.meanKbps.toFixed(0)} kbit/s = ${(r.ofSource * 100).toFixed(0)} % of the source; publisher sent ${r.sentKbps.toFixed(0)}), worker ${r.workerPct.toFixed(0)} %, service ${r.servicePct.toFixed(0)} %, relay ${r.relayPct.toFixed(0)} %, peers ${r.peersPct.toFixed(0)} %, UDP drops ${r.udpDrops} (worker's port ${r.workerDrops}); sessions on the service ${r.serverViewers}, peers connected ${r.peersConnected}`,
      );
      if (!holds(r)) break;
    }
    return { rows, expectedKbps, sentKbpsCal, overhead, verifiedRtp };
  } finally {
    await Promise.all(procs.map((p) => p.quit()));
    ff.kill("SIGINT");
    await ff.exited;
  }
}

// ---------- run and report ----------

const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
console.log(`bench:webrtc  (2 cores shared; load average at start ${load()})`);
const started = performance.now();
try {
  if (part === "all" || part === "latency") {
    console.log(`\n1. glass-to-glass latency, ${seconds} s of frames per path (stream latency LOW, hls.js lowLatencyMode)`);
    const rows = await latencyPart();
    console.log("path         | frames read | unread | p50 ms | p95 ms | max ms");
    for (const { path, r } of rows)
      console.log(
        `${path.padEnd(12)} | ${String(r.lat.length).padStart(11)} | ${String(r.unread).padStart(6)} | ${q(r.lat, 0.5).toFixed(0).padStart(6)} | ${q(r.lat, 0.95).toFixed(0).padStart(6)} | ${Math.max(
          ...r.lat,
        )
          .toFixed(0)
          .padStart(6)}`,
      );
    const p50 = (p: string) => q(rows.find((r) => r.path === p)!.r.lat, 0.5);
    console.log(`ratio WHEP / HLS (p50): WHIP-published ${(p50("WHIP → WHEP") / p50("WHIP → HLS")).toFixed(2)}, RTMP-published ${(p50("RTMP → WHEP") / p50("RTMP → HLS")).toFixed(2)}`);
    console.log(`target WHIP → WHEP p50 < 500 ms: ${p50("WHIP → WHEP") < 500 ? "met" : "NOT met"} (${p50("WHIP → WHEP").toFixed(0)} ms)`);
  }
  if (part === "all" || part === "viewers") {
    console.log(`\n2. WHEP viewers of one RTMP stream (x264 CBR 900k + AAC 64k → H.264 + Opus), werift peers in ${CHILDREN} processes, ${windowS} s windows`);
    const v = await viewersPart();
    console.log(
      `a lone viewer receives ${v.expectedKbps.toFixed(0)} kbit/s (SRTP + RTCP) while ffmpeg sends ${v.sentKbpsCal.toFixed(0)} kbit/s of FLV; it is ${v.overhead.toFixed(3)} × the RTP mediasoup got from the relay, which is the source of each window; the decrypting peers parsed ${v.verifiedRtp} RTP packets`,
    );
    console.log("viewers (failed) | ≥ 90 % of best | mean kbit/s (of source) | sent kbit/s | worker CPU | service CPU | relay ffmpeg | peers (client) CPU | UDP rcvbuf drops (worker's port)");
    for (const r of v.rows)
      console.log(
        `${`${r.n} (${r.failed})`.padStart(15)} | ${`${r.ok}/${r.n}`.padStart(15)} | ${`${r.meanKbps.toFixed(0)} (${(r.ofSource * 100).toFixed(0)} %)`.padStart(22)} | ${r.sentKbps.toFixed(0).padStart(11)} | ${`${r.workerPct.toFixed(0)} %`.padStart(10)} | ${`${r.servicePct.toFixed(0)} %`.padStart(11)} | ${`${r.relayPct.toFixed(0)} %`.padStart(12)} | ${`${r.peersPct.toFixed(0)} %`.padStart(18)} | ${r.udpDrops} (${r.workerDrops})`,
      );
    const held = v.rows.filter(holds);
    const best = held.at(-1);
    if (best) {
      const perCore = best.n / ((best.workerPct + best.servicePct + best.relayPct) / 100);
      console.log(`largest N where every viewer got its stream: ${best.n} (target >= 200: ${best.n >= 200 ? "met" : "NOT met"})`);
      console.log(`viewers per core (worker + service + relay CPU at that N): ${perCore.toFixed(0)}; per worker core: ${(best.n / (best.workerPct / 100)).toFixed(0)}`);
    } else console.log("no step held: every viewer did not get its stream even at the first step");
  }
} finally {
  await t.stop({ cleanup: true });
}
console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s; load average at end ${load()}`);
process.exit(0);
