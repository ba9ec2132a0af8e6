/**
 * WHIP publishers and WHEP viewers in Debian's Chromium (playwright-core):
 * a fake camera and microphone (`--use-fake-device-for-media-stream
 * --use-fake-ui-for-media-stream`: a moving test picture and a beep), pages
 * from a blank page server on another origin than the service (so the WHIP
 * and WHEP calls prove CORS). Every offer waits for ICE gathering to end: the
 * server does no trickle ICE.
 */
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS } from "./browser.ts";

export interface WebrtcBrowser {
  browser: Browser;
  origin: string;
  /** A fresh page on the blank origin. */
  page(): Promise<Page>;
  close(): Promise<void>;
}

export async function startWebrtcBrowser(): Promise<WebrtcBrowser> {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("<!doctype html><title>webrtc</title><body></body>", { headers: { "content-type": "text/html" } }) });
  const origin = `http://127.0.0.1:${server.port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"] });
  return {
    browser,
    origin,
    async page() {
      const p = await browser.newPage();
      await p.goto(`${origin}/`);
      await installWebrtcScript(p);
      return p;
    },
    async close() {
      await browser.close();
      server.stop(true);
    },
  };
}

/** Gives a page of another suite's own browser `whepPlay`, `viewerState`… (a WHEP viewer needs no fake devices). */
export async function installWebrtcScript(page: Page): Promise<void> {
  await page.addScriptTag({ content: PAGE_SCRIPT });
}

export type OfferResult = { status: number; location: string | null; contentType: string | null; body: string };

export interface ViewerState {
  videoWidth: number;
  currentTime: number;
  audioPackets: number;
  /** inbound-rtp audio totalSamplesReceived: samples the Opus decoder produced (decoded audio, not just packets). */
  audioSamples: number;
  videoPackets: number;
  framesDecoded: number;
  tracks: string[];
}

/**
 * The page side, plain browser JavaScript (this project's TypeScript has no
 * DOM types): installed into each page by `page()`.
 */
const PAGE_SCRIPT = `
async function gathered(pc) {
  if (pc.iceGatheringState === "complete") return;
  await new Promise((resolve) => {
    pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && resolve());
    setTimeout(resolve, 3000);
  });
}
async function offerTo(pc, url, headers) {
  await pc.setLocalDescription(await pc.createOffer());
  await gathered(pc);
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/sdp", ...headers }, body: pc.localDescription.sdp });
  const body = await res.text();
  if (res.status === 201) await pc.setRemoteDescription({ type: "answer", sdp: body });
  else pc.close();
  return { status: res.status, location: res.headers.get("location"), contentType: res.headers.get("content-type"), body };
}
async function publisher() {
  const media = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 360, frameRate: 30 }, audio: true });
  const pc = new RTCPeerConnection();
  for (const track of media.getTracks()) {
    const tr = pc.addTransceiver(track, { direction: "sendonly" });
    if (track.kind === "video") {
      const codecs = RTCRtpSender.getCapabilities("video").codecs;
      const h264 = codecs.filter((c) => c.mimeType === "video/H264" && /packetization-mode=1/.test(c.sdpFmtpLine || "") && /profile-level-id=42e01f/.test(c.sdpFmtpLine || ""));
      tr.setCodecPreferences([...h264, ...codecs.filter((c) => c.mimeType === "video/rtx")]);
    }
  }
  window.pc = pc;
  return pc;
}
window.whipPublish = async (url, bearer) => offerTo(await publisher(), url, { authorization: "Bearer " + bearer });
window.whipOffer = async () => {
  const pc = await publisher();
  await pc.setLocalDescription(await pc.createOffer());
  await gathered(pc);
  return pc.localDescription.sdp;
};
window.whipAnswer = async (sdp) => window.pc.setRemoteDescription({ type: "answer", sdp });
window.whepPlay = async (url) => {
  const pc = new RTCPeerConnection();
  pc.addTransceiver("video", { direction: "recvonly" });
  pc.addTransceiver("audio", { direction: "recvonly" });
  const video = document.createElement("video");
  video.muted = true;
  video.autoplay = true;
  video.playsInline = true;
  document.body.append(video);
  const stream = new MediaStream();
  pc.addEventListener("track", (e) => {
    stream.addTrack(e.track);
    video.srcObject = stream;
    video.play().catch(() => undefined);
  });
  window.viewer = { pc, video };
  return offerTo(pc, url, {});
};
window.viewerState = async () => {
  const { pc, video } = window.viewer;
  const state = { videoWidth: video.videoWidth, currentTime: video.currentTime, audioPackets: 0, audioSamples: 0, videoPackets: 0, framesDecoded: 0, tracks: [] };
  state.tracks = video.srcObject ? video.srcObject.getTracks().map((t) => t.kind) : [];
  (await pc.getStats()).forEach((r) => {
    if (r.type !== "inbound-rtp") return;
    if (r.kind === "audio") { state.audioPackets = r.packetsReceived || 0; state.audioSamples = r.totalSamplesReceived || 0; }
    if (r.kind === "video") { state.videoPackets = r.packetsReceived || 0; state.framesDecoded = r.framesDecoded || 0; }
  });
  return state;
};
window.decodedFps = async (ms) => {
  const read = async () => {
    let frames = 0, at = 0;
    (await window.viewer.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "video") { frames = r.framesDecoded || 0; at = r.timestamp; } });
    return { frames, at };
  };
  const a = await read();
  await new Promise((r) => setTimeout(r, ms));
  const b = await read();
  return b.at > a.at ? ((b.frames - a.frames) * 1000) / (b.at - a.at) : 0;
};
`;

/** The functions PAGE_SCRIPT defines on the page's window, as the callbacks below call them there. */
interface WebrtcWindow {
  whipPublish(url: string, bearer: string): Promise<OfferResult>;
  whipOffer(): Promise<string>;
  whipAnswer(sdp: string): Promise<void>;
  whepPlay(url: string): Promise<OfferResult>;
  viewerState(): Promise<ViewerState>;
  decodedFps(ms: number): Promise<number>;
}

/** Publishes the fake camera + microphone by WHIP (H.264 constrained baseline preferred); the connection stays in `window.pc`. */
export function whipPublish(page: Page, whipUrl: string, bearer: string): Promise<OfferResult> {
  return page.evaluate(([u, b]) => (globalThis as unknown as WebrtcWindow).whipPublish(u, b), [whipUrl, bearer] as const);
}

/**
 * The WHIP offer of the page's fake camera and microphone (ICE gathered),
 * for a test that POSTs it itself (e.g. from another client address); hand
 * the answer to `whipAnswer`.
 */
export function whipOffer(page: Page): Promise<string> {
  return page.evaluate(() => (globalThis as unknown as WebrtcWindow).whipOffer());
}

export function whipAnswer(page: Page, sdp: string): Promise<void> {
  return page.evaluate((a) => (globalThis as unknown as WebrtcWindow).whipAnswer(a), sdp);
}

/** Plays a stream by WHEP into a muted <video>; the connection and element stay in `window.viewer`. */
export function whepPlay(page: Page, whepUrl: string): Promise<OfferResult> {
  return page.evaluate((u) => (globalThis as unknown as WebrtcWindow).whepPlay(u), whepUrl);
}

/** What the page's WHEP viewer shows now: the element and its inbound RTP stats. */
export function viewerState(page: Page): Promise<ViewerState> {
  return page.evaluate(() => (globalThis as unknown as WebrtcWindow).viewerState());
}

/** Pictures the page's WHEP viewer decoded per second over `ms` (inbound-rtp framesDecoded, by getStats' own clock). */
export function decodedFps(page: Page, ms: number): Promise<number> {
  return page.evaluate((m) => (globalThis as unknown as WebrtcWindow).decodedFps(m), ms);
}

/** Waits until the viewer plays: a decoded picture (videoWidth > 0) and currentTime advancing; returns the two readings. */
export async function untilPlaying(page: Page, timeoutMs = 60_000): Promise<{ first: ViewerState; later: ViewerState }> {
  const until = Date.now() + timeoutMs;
  let first: ViewerState | undefined;
  let last: ViewerState | undefined;
  while (Date.now() < until) {
    last = await viewerState(page);
    if (last.videoWidth > 0 && last.currentTime > 0) {
      if (!first) first = last;
      else if (last.currentTime > first.currentTime + 0.5) return { first, later: last };
    }
    await Bun.sleep(200);
  }
  throw new Error(`WHEP viewer did not play within ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

/**
 * A live test picture with a tone pushed by ffmpeg, by default as an encoder for WebRTC viewers sends it: H.264
 * without B-frames (zerolatency), a keyframe a second, AAC. `x264`: other encoder flags instead (e.g. the README's).
 */
export function ffmpegTestPublish(url: string, o: { seconds: number; size: string; fps: number; audioKbps: number; x264?: string[] }) {
  return Bun.spawn(
    [
      "ffmpeg",
      ...["-hide_banner", "-loglevel", "error", "-re"],
      ...["-f", "lavfi", "-i", `testsrc2=size=${o.size}:rate=${o.fps}:duration=${o.seconds}`],
      ...["-f", "lavfi", "-i", `sine=frequency=440:sample_rate=48000:duration=${o.seconds}`],
      ...["-c:v", "libx264", ...(o.x264 ?? ["-preset", "veryfast", "-tune", "zerolatency", "-g", String(o.fps)]), "-pix_fmt", "yuv420p"],
      ...["-c:a", "aac", "-b:a", `${o.audioKbps}k`, "-f", "flv", url],
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
}
