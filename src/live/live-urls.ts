import type { Config } from "../config.ts";
import type { ServerSecret } from "../secrets/server-secret.ts";

/** 128 bits of HMAC are plenty for a URL signature and keep the URL short. */
const SIG_LENGTH = 32;

/** Push and playback URLs of a stream; signatures come from the server secret. */
export function createLiveUrls(config: Config, secret: ServerSecret) {
  const token = (streamId: string) => secret.sign("live-path", streamId).slice(0, 40);
  return {
    token,
    verifySignature: (streamKey: string, sig: string | null) => !!sig && secret.verify("rtmp", streamKey, sig, SIG_LENGTH),
    /** What the stream_key_digests table stores and is searched by: the key itself is never stored in plaintext. */
    keyDigest: (streamKey: string) => secret.sign("stream-key", streamKey),
    /** Complete push URL: works as ffmpeg's output and as OBS's Server with a blank key. */
    rtmpUrl(streamKey: string): string {
      return `rtmp://${config.rtmpHost}:${config.rtmpPort}/live/${streamKey}?sig=${secret.sign("rtmp", streamKey).slice(0, SIG_LENGTH)}`;
    },
    /** The service's own live check passes a signed or restricted stream's playback rules with this (src/live/live-player.ts). */
    checkPass: (liveToken: string) => secret.sign("live-check", liveToken).slice(0, SIG_LENGTH),
    isCheckPass: (liveToken: string, pass: string | null) => !!pass && secret.verify("live-check", liveToken, pass, SIG_LENGTH),
    hlsUrl: (streamId: string) => `${config.baseUrl}/live/${token(streamId)}/index.m3u8`,
  };
}

export type LiveUrls = ReturnType<typeof createLiveUrls>;
