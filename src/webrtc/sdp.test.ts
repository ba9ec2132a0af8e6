import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { pickCodec, producerParameters } from "./offer-media.ts";
import { offerCredentials, parseSdp, SdpError, writeAnswer } from "./sdp.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

const FINGERPRINT = Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase()).join(":");

/** A WHIP offer as OBS (libdatachannel) and Chromium send it: bundle, rtcp-mux, H.264 + Opus, RTX by FID. */
const OFFER = [
  "v=0",
  "o=- 4215 2 IN IP4 127.0.0.1",
  "s=-",
  "t=0 0",
  "a=group:BUNDLE 0 1",
  `a=fingerprint:sha-256 ${FINGERPRINT}`,
  "m=audio 9 UDP/TLS/RTP/SAVPF 111",
  "c=IN IP4 0.0.0.0",
  "a=ice-ufrag:uf1",
  "a=ice-pwd:pw1",
  "a=setup:actpass",
  "a=mid:0",
  "a=sendonly",
  "a=rtcp-mux",
  "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
  "a=rtpmap:111 opus/48000/2",
  "a=fmtp:111 minptime=10;useinbandfec=1",
  "a=rtcp-fb:111 transport-cc",
  "a=ssrc:1001 cname:abc",
  "m=video 9 UDP/TLS/RTP/SAVPF 96 97 98",
  "c=IN IP4 0.0.0.0",
  "a=mid:1",
  "a=sendonly",
  "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
  "a=extmap:9 urn:example:unknown",
  "a=rtpmap:96 VP8/90000",
  "a=rtpmap:97 H264/90000",
  "a=fmtp:97 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
  "a=rtcp-fb:97 nack",
  "a=rtcp-fb:97 nack pli",
  "a=rtcp-fb:97 goog-lntf",
  "a=rtpmap:98 rtx/90000",
  "a=fmtp:98 apt=97",
  "a=ssrc-group:FID 2001 2002",
  "a=ssrc:2001 cname:abc",
  "a=ssrc:2002 cname:abc",
  "",
].join("\r\n");

const caps = {
  codecs: [],
  headerExtensions: [
    { kind: "audio" as const, uri: "urn:ietf:params:rtp-hdrext:sdes:mid" as const, preferredId: 1 },
    { kind: "video" as const, uri: "urn:ietf:params:rtp-hdrext:sdes:mid" as const, preferredId: 1 },
  ],
};

describe("WHIP/WHEP SDP", () => {
  test("an offer's sections, codecs, RTX pairing and credentials (session-level fingerprint)", () => {
    const sdp = parseSdp(OFFER);
    expect(sdp.media.map((m) => [m.kind, m.mid, m.direction])).toEqual([
      ["audio", "0", "sendonly"],
      ["video", "1", "sendonly"],
    ]);
    expect(offerCredentials(sdp)).toEqual({ ufrag: "uf1", pwd: "pw1", fingerprint: { algorithm: "sha-256", value: FINGERPRINT } });
    const video = sdp.media[1]!;
    const h264 = pickCodec(video)!;
    expect(h264.pt).toBe(97);
    expect(h264.fmtp).toEqual({ "level-asymmetry-allowed": 1, "packetization-mode": 1, "profile-level-id": "42e01f" });
    const params = producerParameters(video, h264, caps);
    expect(params.codecs.map((c) => [c.mimeType, c.payloadType])).toEqual([
      ["video/H264", 97],
      ["video/rtx", 98],
    ]);
    // goog-lntf is not something mediasoup acts on; the unknown extension is left out.
    expect(params.codecs[0]!.rtcpFeedback).toEqual([
      { type: "nack", parameter: "" },
      { type: "nack", parameter: "pli" },
    ]);
    expect(params.headerExtensions).toEqual([{ uri: "urn:ietf:params:rtp-hdrext:sdes:mid", id: 4 }]);
    expect(params.encodings).toEqual([{ ssrc: 2001, rtx: { ssrc: 2002 } }]);
    expect(params.rtcp).toEqual({ cname: "abc", reducedSize: true });
    expect(pickCodec(sdp.media[0]!)!.name).toBe("opus");
  });

  test("the answer: ICE lite, passive DTLS, every candidate inline, a rejected section kept in place", () => {
    const sdp = parseSdp(OFFER);
    const answer = writeAnswer(
      {
        iceUfrag: "su",
        icePwd: "sp",
        fingerprint: { algorithm: "sha-256", value: "11:22" },
        candidates: [{ foundation: "udpcandidate", priority: 1076302079, address: "127.0.0.1", protocol: "udp", port: 40000 }],
      },
      [
        { rejected: true, offer: sdp.media[0]! },
        { offer: sdp.media[1]!, direction: "recvonly", codecs: [pickCodec(sdp.media[1]!)!], extmaps: [] },
      ],
      "1",
    );
    const lines = answer.split("\r\n");
    expect(lines).toContain("a=ice-lite");
    expect(lines).toContain("a=group:BUNDLE 1");
    expect(lines).toContain("m=audio 0 UDP/TLS/RTP/SAVPF 111");
    expect(lines).toContain("m=video 9 UDP/TLS/RTP/SAVPF 97");
    expect(lines).toContain("a=setup:passive");
    expect(lines).toContain("a=candidate:udpcandidate 1 udp 1076302079 127.0.0.1 40000 typ host");
    expect(lines).toContain("a=fmtp:97 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f");
    expect(lines.indexOf("m=audio 0 UDP/TLS/RTP/SAVPF 111")).toBeLessThan(lines.indexOf("m=video 9 UDP/TLS/RTP/SAVPF 97"));
  });

  test("not an SDP, or no ICE credentials", () => {
    expect(() => parseSdp("{}")).toThrow(SdpError);
    expect(() => offerCredentials(parseSdp("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"))).toThrow(SdpError);
  });

  test("numbers out of range are refused as the offer's fault (SdpError → 422), before anything reaches the worker", () => {
    const bad: [string, string][] = [
      ["m=video 9 UDP/TLS/RTP/SAVPF 96 97 98", "m=video 9 UDP/TLS/RTP/SAVPF 96 97 300"],
      ["a=rtpmap:97 H264/90000", "a=rtpmap:200 H264/90000"],
      ["m=video 9 UDP/TLS/RTP/SAVPF 96 97 98", "m=video 70000 UDP/TLS/RTP/SAVPF 96 97 98"],
      ["m=video 9 UDP/TLS/RTP/SAVPF 96 97 98", "m=video -1 UDP/TLS/RTP/SAVPF 96 97 98"],
      ["m=video 9 UDP/TLS/RTP/SAVPF 96 97 98", "m=video x UDP/TLS/RTP/SAVPF 96 97 98"],
      [`a=fingerprint:sha-256 ${FINGERPRINT}`, "a=fingerprint:sha-256 AB:CD:EF"],
      [`a=fingerprint:sha-256 ${FINGERPRINT}`, `a=fingerprint:md5 ${FINGERPRINT}`],
      [`a=fingerprint:sha-256 ${FINGERPRINT}`, `a=fingerprint:sha-256 ${FINGERPRINT.replace("00", "ZZ")}`],
      [`a=fingerprint:sha-256 ${FINGERPRINT}`, "a=fingerprint:sha-256"],
      ["a=extmap:9 urn:example:unknown", "a=extmap:0 urn:example:unknown"],
      ["a=ssrc:2002 cname:abc", "a=ssrc:4294967296 cname:abc"],
      ["a=ssrc-group:FID 2001 2002", "a=ssrc-group:FID 2001 99999999999"],
      ["a=rtpmap:111 opus/48000/2", "a=rtpmap:111 opus/48000/9999"],
    ];
    for (const [line, replaced] of bad) {
      expect(OFFER).toContain(line);
      expect(() => parseSdp(OFFER.replace(line, replaced)), replaced).toThrow(SdpError);
    }
    // A data channel's format is not a payload type; a rejected (port 0) section is fine.
    expect(() => parseSdp(`${OFFER}m=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\n`)).not.toThrow();
  });
});
