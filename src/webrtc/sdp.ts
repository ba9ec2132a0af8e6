/**
 * The part of SDP (RFC 8866, JSEP/unified plan) that WHIP and WHEP need:
 * an offer parsed into m-sections with their codecs, header extensions and
 * SSRCs; an answer written from what mediasoup chose. mediasoup speaks no
 * SDP (its clients normally do); a package for this (sdp-transform) is not
 * installed, and the subset is small: no simulcast, no trickle, one bundle.
 */

export type Direction = "sendrecv" | "sendonly" | "recvonly" | "inactive";

export interface SdpCodec {
  pt: number;
  name: string;
  clockRate: number;
  channels?: number;
  fmtp: Record<string, string | number>;
  rtcpFb: { type: string; parameter: string }[];
}

export interface SdpMedia {
  kind: string;
  port: number;
  protocol: string;
  formats: string[];
  mid?: string;
  direction: Direction;
  codecs: SdpCodec[];
  extmaps: { id: number; uri: string }[];
  /** a=ssrc lines by SSRC: cname, msid. */
  ssrcs: Map<number, Record<string, string>>;
  ssrcGroups: { semantics: string; ssrcs: number[] }[];
  iceUfrag?: string;
  icePwd?: string;
  fingerprint?: { algorithm: string; value: string };
  setup?: string;
}

export interface SessionDescription {
  media: SdpMedia[];
  iceUfrag?: string;
  icePwd?: string;
  fingerprint?: { algorithm: string; value: string };
  setup?: string;
}

export class SdpError extends Error {
  override name = "SdpError";
}

/** Values that are plain integers become numbers (mediasoup compares `packetization-mode: 1`), except H.264's profile-level-id. */
function parseFmtp(text: string): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    out[key] = key !== "profile-level-id" && /^\d+$/.test(value) ? Number(value) : value;
  }
  return out;
}

/** DTLS fingerprint hashes (RFC 8122) and their digest sizes in bytes: what mediasoup's transport accepts. */
const FINGERPRINT_BYTES: Record<string, number> = { "sha-1": 20, "sha-224": 28, "sha-256": 32, "sha-384": 48, "sha-512": 64 };

/** An RTP payload type: 0-127 (7 bits); anything else in an offer is refused, not handed to the worker. */
function payloadType(text: string | undefined, where: string): number {
  const pt = Number(text);
  if (!/^\d{1,3}$/.test(text ?? "") || pt > 127) throw new SdpError(`${where}: payload type ${JSON.stringify(text)} is not 0-127.`);
  return pt;
}

/** A decimal integer of the offer within [min, max], else the offer is refused (422) before anything reaches the worker. */
function bounded(text: string | undefined, min: number, max: number, what: string): number {
  const n = Number(text);
  if (!/^\d{1,10}$/.test(text ?? "") || n < min || n > max) throw new SdpError(`${what} ${JSON.stringify(text)} is not ${min}-${max}.`);
  return n;
}

function mediaPort(text: string | undefined): number {
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text ?? "") || port > 65535) throw new SdpError(`m= line: port ${JSON.stringify(text)} is not 0-65535.`);
  return port;
}

function fingerprintOf(rest: string): { algorithm: string; value: string } {
  const [algorithm, fp] = rest.split(" ");
  const alg = (algorithm ?? "").toLowerCase();
  const value = (fp ?? "").toUpperCase();
  const bytes = FINGERPRINT_BYTES[alg];
  if (bytes === undefined) throw new SdpError(`a=fingerprint: hash ${JSON.stringify(algorithm ?? "")} is not one of ${Object.keys(FINGERPRINT_BYTES).join(", ")}.`);
  if (!new RegExp(`^[0-9A-F]{2}(:[0-9A-F]{2}){${bytes - 1}}$`).test(value)) throw new SdpError(`a=fingerprint: a ${alg} fingerprint is ${bytes} hex bytes separated by colons.`);
  return { algorithm: alg, value };
}

export function parseSdp(text: string): SessionDescription {
  if (!/^v=0\r?\n/.test(text)) throw new SdpError("Not an SDP (it must start with v=0).");
  const session: SessionDescription = { media: [] };
  let m: SdpMedia | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.length < 2 || line[1] !== "=") continue;
    const type = line[0];
    const value = line.slice(2);
    if (type === "m") {
      const [kind, port, protocol, ...formats] = value.split(" ");
      // RTP sections list payload types; others (a data channel's webrtc-datachannel) their own formats.
      if (/RTP/.test(protocol ?? "")) for (const f of formats) payloadType(f, "m= line");
      m = { kind: kind ?? "", port: mediaPort(port), protocol: protocol ?? "", formats, direction: "sendrecv", codecs: [], extmaps: [], ssrcs: new Map(), ssrcGroups: [] };
      session.media.push(m);
      continue;
    }
    if (type !== "a") continue;
    const colon = value.indexOf(":");
    const name = colon < 0 ? value : value.slice(0, colon);
    const rest = colon < 0 ? "" : value.slice(colon + 1);
    const target = m ?? session;
    switch (name) {
      case "ice-ufrag":
        target.iceUfrag = rest;
        break;
      case "ice-pwd":
        target.icePwd = rest;
        break;
      case "fingerprint":
        target.fingerprint = fingerprintOf(rest);
        break;
      case "setup":
        target.setup = rest;
        break;
      default:
        if (m) parseMediaAttribute(m, name, rest);
    }
  }
  return session;
}

function codecOf(m: SdpMedia, pt: number): SdpCodec | undefined {
  return m.codecs.find((c) => c.pt === pt);
}

function parseMediaAttribute(m: SdpMedia, name: string, rest: string) {
  switch (name) {
    case "mid":
      m.mid = rest;
      return;
    case "sendrecv":
    case "sendonly":
    case "recvonly":
    case "inactive":
      m.direction = name;
      return;
    case "rtpmap": {
      const match = /^(\d+) ([^/]+)\/(\d+)(?:\/(\d+))?/.exec(rest);
      if (!match) return;
      const codec: SdpCodec = { pt: payloadType(match[1], "a=rtpmap"), name: match[2]!, clockRate: bounded(match[3], 1, 1_000_000, "a=rtpmap: clock rate"), fmtp: {}, rtcpFb: [] };
      if (match[4]) codec.channels = bounded(match[4], 1, 255, "a=rtpmap: channels");
      m.codecs.push(codec);
      return;
    }
    case "fmtp": {
      const sp = rest.indexOf(" ");
      const codec = codecOf(m, Number(rest.slice(0, sp)));
      if (codec && sp > 0) codec.fmtp = parseFmtp(rest.slice(sp + 1));
      return;
    }
    case "rtcp-fb": {
      const [pt, type, parameter] = rest.split(" ");
      const codec = codecOf(m, Number(pt));
      if (codec && type) codec.rtcpFb.push({ type, parameter: parameter ?? "" });
      return;
    }
    case "extmap": {
      const match = /^(\d+)(?:\/\w+)? (\S+)/.exec(rest);
      // RFC 8285: ids 1-14 (one-byte headers) and up to 255 (two-byte).
      if (match) m.extmaps.push({ id: bounded(match[1], 1, 255, "a=extmap: id"), uri: match[2]! });
      return;
    }
    case "ssrc": {
      const match = /^(\d+) ([\w-]+)(?::(.*))?$/.exec(rest);
      if (!match) return;
      const ssrc = bounded(match[1], 0, 0xffffffff, "a=ssrc:");
      const attrs = m.ssrcs.get(ssrc) ?? {};
      attrs[match[2]!] = match[3] ?? "";
      m.ssrcs.set(ssrc, attrs);
      return;
    }
    case "ssrc-group": {
      const [semantics, ...ssrcs] = rest.split(" ");
      if (semantics) m.ssrcGroups.push({ semantics, ssrcs: ssrcs.map((x) => bounded(x, 0, 0xffffffff, "a=ssrc-group:")) });
      return;
    }
  }
}

/** The ICE and DTLS side of the answer: mediasoup's transport. */
export interface AnswerTransport {
  iceUfrag: string;
  icePwd: string;
  /** sha-256 fingerprint of mediasoup's DTLS certificate. */
  fingerprint: { algorithm: string; value: string };
  candidates: { foundation: string; priority: number; address: string; protocol: "udp" | "tcp"; port: number; tcpType?: string }[];
}

/** One answered m-section: rejected (port 0), or what we receive or send on it. */
export type AnsweredMedia =
  | { rejected: true; offer: SdpMedia }
  | {
      rejected?: false;
      offer: SdpMedia;
      direction: Direction;
      codecs: SdpCodec[];
      extmaps: { id: number; uri: string }[];
      /** What we send (WHEP): its SSRC and CNAME, and the stream/track ids. */
      send?: { ssrc: number; cname: string; streamId: string; trackId: string };
    };

/** Writes the answer: ICE lite, DTLS passive (the client connects), every candidate inline (no trickle), one BUNDLE. */
export function writeAnswer(transport: AnswerTransport, media: AnsweredMedia[], sessionId: string): string {
  const lines = ["v=0", `o=- ${sessionId} 1 IN IP4 0.0.0.0`, "s=-", "t=0 0", "a=ice-lite"];
  const bundled = media.filter((a) => !a.rejected).map((a) => a.offer.mid ?? "");
  if (bundled.length > 0) lines.push(`a=group:BUNDLE ${bundled.join(" ")}`);
  lines.push("a=msid-semantic: WMS *");
  for (const a of media) {
    const offer = a.offer;
    if (a.rejected) {
      lines.push(`m=${offer.kind} 0 ${offer.protocol} ${offer.formats.join(" ")}`, "c=IN IP4 0.0.0.0");
      if (offer.mid !== undefined) lines.push(`a=mid:${offer.mid}`);
      lines.push("a=inactive");
      continue;
    }
    lines.push(`m=${offer.kind} 9 UDP/TLS/RTP/SAVPF ${a.codecs.map((c) => c.pt).join(" ")}`, "c=IN IP4 0.0.0.0");
    lines.push(`a=ice-ufrag:${transport.iceUfrag}`, `a=ice-pwd:${transport.icePwd}`);
    lines.push(`a=fingerprint:${transport.fingerprint.algorithm} ${transport.fingerprint.value}`, "a=setup:passive");
    lines.push(`a=mid:${offer.mid ?? ""}`, `a=${a.direction}`, "a=rtcp-mux", "a=rtcp-rsize");
    for (const e of a.extmaps) lines.push(`a=extmap:${e.id} ${e.uri}`);
    for (const c of a.codecs) {
      lines.push(`a=rtpmap:${c.pt} ${c.name}/${c.clockRate}${c.channels && c.channels > 1 ? `/${c.channels}` : ""}`);
      for (const fb of c.rtcpFb) lines.push(`a=rtcp-fb:${c.pt} ${fb.type}${fb.parameter ? ` ${fb.parameter}` : ""}`);
      const fmtp = Object.entries(c.fmtp);
      if (fmtp.length > 0) lines.push(`a=fmtp:${c.pt} ${fmtp.map(([k, v]) => `${k}=${v}`).join(";")}`);
    }
    if (a.send) {
      lines.push(`a=msid:${a.send.streamId} ${a.send.trackId}`);
      lines.push(`a=ssrc:${a.send.ssrc} cname:${a.send.cname}`, `a=ssrc:${a.send.ssrc} msid:${a.send.streamId} ${a.send.trackId}`);
    }
    // With BUNDLE the candidates of the first section serve all; repeating them is harmless and helps clients that look per section.
    for (const c of transport.candidates) {
      lines.push(`a=candidate:${c.foundation} 1 ${c.protocol} ${c.priority} ${c.address} ${c.port} typ host${c.protocol === "tcp" ? ` tcptype ${c.tcpType ?? "passive"}` : ""}`);
    }
    lines.push("a=end-of-candidates");
  }
  return `${lines.join("\r\n")}\r\n`;
}

/** ICE credentials and DTLS fingerprint of the offer: on the section or the session. */
export function offerCredentials(sdp: SessionDescription): { ufrag: string; pwd: string; fingerprint: { algorithm: string; value: string } } {
  const m = sdp.media.find((x) => x.port !== 0);
  const ufrag = m?.iceUfrag ?? sdp.iceUfrag;
  const pwd = m?.icePwd ?? sdp.icePwd;
  const fingerprint = m?.fingerprint ?? sdp.fingerprint;
  if (!ufrag || !pwd) throw new SdpError("The offer has no ICE credentials (a=ice-ufrag, a=ice-pwd).");
  if (!fingerprint) throw new SdpError("The offer has no DTLS fingerprint (a=fingerprint).");
  return { ufrag, pwd, fingerprint };
}
