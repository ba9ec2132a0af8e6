import type { RtpCapabilities, RtpCodecParameters, RtpEncodingParameters, RtpHeaderExtensionParameters, RtpParameters, WebRtcTransport } from "mediasoup/types";
import { H264_PROFILE } from "./media-server.ts";
import { type AnswerTransport, type SdpCodec, type SdpMedia, SdpError } from "./sdp.ts";

/** RTCP feedback mediasoup acts on; anything else offered is left out of the answer. */
const FEEDBACK = new Set(["nack", "nack pli", "ccm fir", "goog-remb", "transport-cc"]);

export function supportedFeedback(codec: SdpCodec) {
  return codec.rtcpFb.filter((fb) => FEEDBACK.has(fb.parameter ? `${fb.type} ${fb.parameter}` : fb.type));
}

/** The offer's codec we take for a kind: Opus, or H.264 constrained baseline with packetization-mode 1. */
export function pickCodec(m: SdpMedia): SdpCodec | undefined {
  if (m.kind === "audio") return m.codecs.find((c) => c.name.toLowerCase() === "opus" && c.clockRate === 48000);
  if (m.kind !== "video") return undefined;
  const h264 = m.codecs.filter((c) => c.name.toLowerCase() === "h264" && c.clockRate === 90000 && Number(c.fmtp["packetization-mode"] ?? 0) === 1);
  return h264.find((c) => String(c.fmtp["profile-level-id"] ?? "").toLowerCase() === H264_PROFILE) ?? h264.find((c) => /^42e0/i.test(String(c.fmtp["profile-level-id"] ?? "")));
}

export function rtxFor(m: SdpMedia, pt: number): SdpCodec | undefined {
  return m.codecs.find((c) => c.name.toLowerCase() === "rtx" && Number(c.fmtp.apt) === pt);
}

function codecParameters(c: SdpCodec, kind: string): RtpCodecParameters {
  return {
    mimeType: `${kind}/${c.name}`,
    payloadType: c.pt,
    clockRate: c.clockRate,
    ...(c.channels ? { channels: c.channels } : {}),
    parameters: c.fmtp,
    rtcpFeedback: supportedFeedback(c),
  };
}

/** The offer's header extensions that `caps` (a router's) knows for this kind, with the offer's ids. */
export function knownExtensions(m: SdpMedia, caps: RtpCapabilities): RtpHeaderExtensionParameters[] {
  const uris = new Set((caps.headerExtensions ?? []).filter((e) => e.kind === m.kind).map((e) => e.uri));
  return m.extmaps.filter((e) => uris.has(e.uri as never)).map((e) => ({ uri: e.uri as RtpHeaderExtensionParameters["uri"], id: e.id }));
}

/** What a publisher's m-section sends, as mediasoup's producer parameters (one encoding: no simulcast). */
export function producerParameters(m: SdpMedia, codec: SdpCodec, caps: RtpCapabilities): RtpParameters {
  const rtx = rtxFor(m, codec.pt);
  const fid = m.ssrcGroups.find((g) => g.semantics === "FID");
  const ssrc = fid?.ssrcs[0] ?? [...m.ssrcs.keys()][0];
  if (ssrc === undefined) throw new SdpError(`The ${m.kind} section has no a=ssrc line.`);
  const encoding: RtpEncodingParameters = { ssrc };
  if (rtx && fid?.ssrcs[1] !== undefined) encoding.rtx = { ssrc: fid.ssrcs[1] };
  const cname = m.ssrcs.get(ssrc)?.cname;
  return {
    mid: m.mid,
    codecs: [codecParameters(codec, m.kind), ...(rtx ? [codecParameters(rtx, m.kind)] : [])],
    headerExtensions: knownExtensions(m, caps),
    encodings: [encoding],
    rtcp: { ...(cname ? { cname } : {}), reducedSize: true },
  };
}

/** ICE and DTLS of a mediasoup transport, for the answer. */
export function answerTransport(t: WebRtcTransport): AnswerTransport {
  const fp = t.dtlsParameters.fingerprints.find((f) => f.algorithm === "sha-256") ?? t.dtlsParameters.fingerprints[0]!;
  return {
    iceUfrag: t.iceParameters.usernameFragment,
    icePwd: t.iceParameters.password,
    fingerprint: { algorithm: fp.algorithm, value: fp.value },
    candidates: t.iceCandidates.map((c) => ({
      foundation: c.foundation,
      priority: c.priority,
      address: c.address ?? c.ip,
      protocol: c.protocol,
      port: c.port,
      ...(c.tcpType ? { tcpType: c.tcpType } : {}),
    })),
  };
}
