import type { FingerprintAlgorithm, Producer, WebRtcTransport } from "mediasoup/types";
import type { MediaServer } from "./media-server.ts";
import { answerTransport, knownExtensions, pickCodec, producerParameters, rtxFor, supportedFeedback } from "./offer-media.ts";
import { type AnsweredMedia, offerCredentials, parseSdp, SdpError, writeAnswer } from "./sdp.ts";

export interface PublishedMedia {
  transport: WebRtcTransport;
  video: Producer;
  audio?: Producer;
  answer: string;
}

/**
 * A WHIP offer → a WebRtcTransport on the ingest router with one producer per
 * kind, and the SDP answer. H.264 video is required (the pipeline keeps it as
 * is: FLV, HLS and the recording are H.264); Opus audio is optional. Other
 * sections (a second video, data channels) are rejected in the answer.
 */
export async function acceptPublishOffer(server: MediaServer, offerText: string): Promise<PublishedMedia> {
  const offer = parseSdp(offerText);
  const creds = offerCredentials(offer);
  const picks = offer.media.map((m) => ({ m, codec: m.port !== 0 && (m.direction === "sendonly" || m.direction === "sendrecv") ? pickCodec(m) : undefined }));
  const videoPick = picks.find((p) => p.m.kind === "video" && p.codec);
  if (!videoPick) throw new SdpError("The offer sends no H.264 video (packetization-mode=1, constrained baseline 42e01f): WHIP ingest keeps H.264 as is.");
  const audioPick = picks.find((p) => p.m.kind === "audio" && p.codec);
  if (audioPick && audioPick.codec!.pt === videoPick.codec!.pt) throw new SdpError(`The offer gives audio and video the same payload type (${audioPick.codec!.pt}).`);

  const transport = await server.webRtcTransport(server.router);
  try {
    await transport.connect({ dtlsParameters: { role: "client", fingerprints: [{ algorithm: creds.fingerprint.algorithm as FingerprintAlgorithm, value: creds.fingerprint.value }] } });
    const caps = server.router.rtpCapabilities;
    const video = await transport.produce({ kind: "video", rtpParameters: producerParameters(videoPick.m, videoPick.codec!, caps) });
    const audio = audioPick ? await transport.produce({ kind: "audio", rtpParameters: producerParameters(audioPick.m, audioPick.codec!, caps) }) : undefined;
    const answered: AnsweredMedia[] = offer.media.map((m) => {
      const pick = m === videoPick.m ? videoPick : m === audioPick?.m ? audioPick : undefined;
      if (!pick?.codec) return { rejected: true, offer: m };
      const rtx = rtxFor(m, pick.codec.pt);
      return {
        offer: m,
        direction: "recvonly",
        codecs: [pick.codec, ...(rtx ? [rtx] : [])].map((c) => ({ ...c, rtcpFb: supportedFeedback(c) })),
        extmaps: knownExtensions(m, caps),
      };
    });
    return { transport, video, audio, answer: writeAnswer(answerTransport(transport), answered, String(Date.now())) };
  } catch (err) {
    transport.close();
    // mediasoup refusing the parameters (unsupported codec profile, bad SSRCs) is the offer's fault.
    if (err instanceof SdpError) throw err;
    if (err instanceof Error && /unsupported|invalid|missing/i.test(err.message)) throw new SdpError(`The offer cannot be received: ${err.message}`);
    throw err;
  }
}
