/**
 * Lightweight WHEP viewers for bench/webrtc.ts: werift (pure TypeScript
 * WebRTC) peers in this one Bun process, each a real WHEP session (SDP offer,
 * ICE, DTLS-SRTP with the service's mediasoup) that only receives.
 *
 * Why no decryption: the bench measures the server, and on a 2-core machine
 * 300 peers decrypting SRTP in JavaScript would take the cores the server
 * needs. So only the first peer of the process decrypts and parses its RTP
 * (proof the media is real: `verifiedRtp`); the others count the SRTP bytes
 * and packets that reach their ICE socket after DTLS (the
 * `RTCDtlsTransport.startSrtp` hook below). Nobody sends receiver reports or
 * NACKs from the light peers, which mediasoup does not need to keep sending.
 *
 * Commands on stdin, one per line; one JSON line answers each on stdout:
 *   add K        → {added, failed, errors}     (K more peers, 10 offers at a time)
 *   measure S    → {bytes: number[], packets: number[], seconds, verifiedRtp, connected}  (per peer, over S s)
 *   quit         → DELETE every session, exit
 * Usage: bun bench/webrtc-viewers.ts <whep_url>
 */
import { RTCDtlsTransport, RTCPeerConnection, useH264, useOPUS } from "werift";

const whepUrl = process.argv[2]!;

let fullPeers = 0;
let verifiedRtp = 0;
const proto = RTCDtlsTransport.prototype as any;
const startSrtp = proto.startSrtp;
proto.startSrtp = function (this: any) {
  if (fullPeers++ === 0) {
    startSrtp.call(this);
    this.onRtp.subscribe(() => verifiedRtp++);
    return;
  }
  if (this.srtpStarted) return;
  this.srtpStarted = true;
  this.iceTransport.connection.onData.subscribe((data: Buffer) => {
    // RTP/RTCP (first byte 128–191), not STUN or DTLS: what startSrtp counts too.
    if (data[0]! < 128 || data[0]! > 191) return;
    this.bytesReceived += data.length;
    this.packetsReceived++;
  });
};

interface Peer {
  pc: RTCPeerConnection;
  dtls: () => RTCDtlsTransport | undefined;
  location: string;
}
const peers: Peer[] = [];

async function connect(): Promise<void> {
  const pc = new RTCPeerConnection({
    // No STUN: everything is on loopback (werift's default asks Google's server).
    iceServers: [],
    iceUseIpv6: false,
    codecs: { video: [useH264({ payloadType: 102 })], audio: [useOPUS({ payloadType: 111 })] },
  });
  pc.addTransceiver("video", { direction: "recvonly" });
  pc.addTransceiver("audio", { direction: "recvonly" });
  await pc.setLocalDescription(await pc.createOffer());
  if (pc.iceGatheringState !== "complete") await new Promise<void>((r) => pc.iceGatheringStateChange.subscribe((s) => s === "complete" && r()));
  const res = await fetch(whepUrl, { method: "POST", headers: { "content-type": "application/sdp" }, body: pc.localDescription!.sdp });
  const body = await res.text();
  if (res.status !== 201) {
    await pc.close();
    throw new Error(`WHEP ${res.status}: ${body.slice(0, 200)}`);
  }
  await pc.setRemoteDescription({ type: "answer", sdp: body });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not connected in 20 s (${pc.connectionState})`)), 20_000);
    const check = () => {
      if (pc.connectionState === "connected") {
        clearTimeout(timer);
        resolve();
      } else if (pc.connectionState === "failed") {
        clearTimeout(timer);
        reject(new Error("connection failed"));
      }
    };
    pc.connectionStateChange.subscribe(check);
    check();
  });
  const location = new URL(res.headers.get("location")!, whepUrl).toString();
  peers.push({ pc, location, dtls: () => pc.dtlsTransports[0] });
}

async function add(k: number) {
  let failed = 0;
  const errors = new Set<string>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < k) {
        next++;
        await connect().catch((e: Error) => {
          failed++;
          errors.add(e.message);
        });
      }
    }),
  );
  return { added: k - failed, failed, errors: [...errors].slice(0, 3), total: peers.length };
}

async function measure(seconds: number) {
  const read = () => peers.map((p) => ({ b: p.dtls()?.bytesReceived ?? 0, n: p.dtls()?.packetsReceived ?? 0 }));
  const before = read();
  const t0 = performance.now();
  await Bun.sleep(seconds * 1000);
  const after = read();
  const s = (performance.now() - t0) / 1000;
  const connected = peers.filter((p) => p.pc.connectionState === "connected").length;
  return { seconds: s, bytes: after.map((a, i) => a.b - before[i]!.b), packets: after.map((a, i) => a.n - before[i]!.n), verifiedRtp, connected };
}

async function quit() {
  await Promise.all(peers.map((p) => fetch(p.location, { method: "DELETE" }).catch(() => undefined)));
  await Promise.all(peers.map((p) => p.pc.close().catch(() => undefined)));
}

const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
for await (const line of console) {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === "add") say(await add(Number(arg)));
  else if (cmd === "measure") say(await measure(Number(arg)));
  else if (cmd === "quit") {
    await quit();
    say({ quit: true });
    process.exit(0);
  }
}
