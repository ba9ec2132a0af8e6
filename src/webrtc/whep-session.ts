import type { Consumer, FingerprintAlgorithm, Producer, RtpCapabilities, RtpCodecCapability, WebRtcTransport } from "mediasoup/types";
import type { MediaServer } from "./media-server.ts";
import { answerTransport, pickCodec, supportedFeedback } from "./offer-media.ts";
import { type AnsweredMedia, offerCredentials, parseSdp, SdpError, writeAnswer } from "./sdp.ts";

/** What a stream offers its viewers: producers of the ingest router. */
export interface MediaSource {
  video?: Producer;
  audio?: Producer;
}

export interface PlayedMedia {
  transport: WebRtcTransport;
  consumers: Consumer[];
  answer: string;
  /** Gives the viewer router back (media-server.ts `viewerRouter`): call once the viewer is gone. */
  release: () => void;
}

/**
 * A WHEP offer → a WebRtcTransport on a viewer router of the stream whose payload
 * types are the client's (media-server.ts `viewerRouter`), a consumer per offered kind
 * the stream has, and the SDP answer (sendonly, with SSRC and CNAME so the
 * client demuxes without the mid extension). Needs Opus and H.264
 * constrained baseline in the offer, as every browser offers them.
 */
export async function acceptPlayOffer(server: MediaServer, streamId: string, offerText: string, source: MediaSource): Promise<PlayedMedia> {
  const offer = parseSdp(offerText);
  const creds = offerCredentials(offer);
  const wanted = offer.media.map((m) => {
    const producer = m.port === 0 || m.direction === "sendonly" || m.direction === "inactive" ? undefined : m.kind === "video" ? source.video : m.kind === "audio" ? source.audio : undefined;
    return { m, producer, codec: producer ? pickCodec(m) : undefined };
  });
  const used = wanted.filter((w) => w.producer && w.codec);
  // One consumer per kind: a second video section is rejected.
  const seen = new Set<string>();
  const taken = used.filter((w) => !seen.has(w.m.kind) && seen.add(w.m.kind));
  if (taken.length === 0) throw new SdpError("The offer receives no media this stream has (Opus audio, H.264 42e01f video with packetization-mode=1).");
  // A kind the client does not receive still needs a payload type in its router: any other than the one in use.
  const offeredOpus = taken.find((w) => w.m.kind === "audio")?.codec?.pt;
  const offeredH264 = taken.find((w) => w.m.kind === "video")?.codec?.pt;
  if (offeredOpus !== undefined && offeredOpus === offeredH264) throw new SdpError(`The offer gives audio and video the same payload type (${offeredOpus}).`);
  const opus = offeredOpus ?? (offeredH264 === 111 ? 110 : 111);
  const h264 = offeredH264 ?? (opus === 102 ? 103 : 102);
  const { router, release } = await server.viewerRouter(streamId, { opus, h264 });

  let transport: WebRtcTransport | undefined;
  const consumers: Consumer[] = [];
  try {
    transport = await server.webRtcTransport(router);
    await transport.connect({ dtlsParameters: { role: "client", fingerprints: [{ algorithm: creds.fingerprint.algorithm as FingerprintAlgorithm, value: creds.fingerprint.value }] } });
    const answered: AnsweredMedia[] = [];
    for (const w of wanted) {
      if (!taken.includes(w)) {
        answered.push({ rejected: true, offer: w.m });
        continue;
      }
      const codec = w.codec!;
      const routerExts = router.rtpCapabilities.headerExtensions ?? [];
      // A consumer keeps only the extensions whose id the client uses for the same URI (ids are the router's).
      const headerExtensions = w.m.extmaps.flatMap((e) => {
        const ours = routerExts.find((r) => r.kind === w.m.kind && r.uri === e.uri && r.preferredId === e.id);
        return ours ? [{ ...ours }] : [];
      });
      const capCodec: RtpCodecCapability = {
        kind: w.m.kind as "audio" | "video",
        mimeType: `${w.m.kind}/${codec.name}` as RtpCodecCapability["mimeType"],
        preferredPayloadType: codec.pt,
        clockRate: codec.clockRate,
        ...(codec.channels ? { channels: codec.channels } : {}),
        parameters: codec.fmtp,
        rtcpFeedback: supportedFeedback(codec),
      };
      const caps: RtpCapabilities = { codecs: [capCodec], headerExtensions };
      const producer = await server.pipe(w.producer!, router);
      const consumer = await transport.consume({ producerId: producer.id, rtpCapabilities: caps, paused: false });
      consumers.push(consumer);
      const sent = consumer.rtpParameters;
      const sentCodec = sent.codecs[0]!;
      answered.push({
        offer: w.m,
        direction: "sendonly",
        codecs: [{ ...codec, pt: sentCodec.payloadType, rtcpFb: (sentCodec.rtcpFeedback ?? []).map((f) => ({ type: f.type, parameter: f.parameter ?? "" })) }],
        extmaps: (sent.headerExtensions ?? []).map((e) => ({ id: e.id, uri: e.uri })),
        send: { ssrc: sent.encodings![0]!.ssrc!, cname: sent.rtcp?.cname ?? "vidlive", streamId: "vidlive", trackId: consumer.id },
      });
    }
    return { transport, consumers, release, answer: writeAnswer(answerTransport(transport), answered, String(Date.now())) };
  } catch (err) {
    transport?.close();
    release();
    if (err instanceof SdpError) throw err;
    if (err instanceof Error && /unsupported|no compatible|invalid/i.test(err.message)) throw new SdpError(`The offer cannot be served: ${err.message}`);
    throw err;
  }
}
