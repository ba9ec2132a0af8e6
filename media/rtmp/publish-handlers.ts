/**
 * The contract between the RTMP server and the service that embeds it. The
 * server knows nothing about stream records or storage: it asks `authorize`
 * whether a publish may start and hands media to the returned sink.
 */

export type MediaMessageType = "audio" | "video" | "data";

/** One media message; shaped like an FLV tag (media/flv's FlvTag is compatible). */
export interface MediaMessage {
  type: MediaMessageType;
  /** Milliseconds, unsigned 32-bit (extended timestamps applied; wraps after ~49.7 days). */
  timestamp: number;
  /**
   * Exactly the FLV tag body. For 'data' it is the AMF0 body an FLV script tag
   * holds ("onMetaData", {...}) with RTMP's "@setDataFrame" wrapper removed.
   * The sink owns it (a fresh buffer per message).
   */
  payload: Uint8Array;
}

export interface PublishRequest {
  /** Application path without the stream key ("live" for both encoder forms). */
  app: string;
  /** The stream key: last path segment, the same for the ffmpeg and OBS URL forms. */
  streamKey: string;
  /** Query parameters gathered from the publishing name, app and tcUrl (e.g. `sig`). */
  query: URLSearchParams;
  /** Publishing type from the publish command: "live" (usual), "record" or "append". */
  publishType: string;
  remoteAddress: string;
  /** What the encoder actually sent, for logs and debugging. */
  raw: { app: string; name: string; tcUrl: string };
}

/** Why a publish ended; `onClose` receives exactly one of these, exactly once. */
export type CloseReason =
  /** The encoder said so (FCUnpublish, deleteStream or closeStream). */
  | "unpublish"
  /** The socket closed without an unpublish (encoder killed, network gone). */
  | "disconnect"
  /** No bytes for `idleTimeoutMs` (or, while `authorize` was pending, the publish deadline passed). */
  | "timeout"
  /** Protocol violation by the peer, or the sink threw / rejected. */
  | "error"
  /** `kick()` or `stop()` on the server. */
  | "kicked"
  /** Media arrived faster than the server's `maxBitrateKbps` (see bitrate-meter.ts). */
  | "bitrate";

export interface MediaSink {
  /**
   * Called in order, never concurrently. Returning a promise applies
   * backpressure: no further message is delivered until it settles, and the
   * socket stops being read once a small buffer fills. A throw or rejection
   * closes the connection with reason 'error'.
   */
  onMessage(message: MediaMessage): void | Promise<void>;
  /** Called once, after any pending onMessage promise has settled. */
  onClose(reason: CloseReason): void;
}

export type AuthorizeResult =
  | {
      ok: true;
      sink: MediaSink;
      /**
       * Tags the server adds to its log entries about this publish from now
       * on (e.g. `{ stream_id }`), so a disconnect for the bitrate cap names
       * the stream. Never put the stream key here.
       */
      logTags?: Record<string, unknown>;
    }
  | {
      ok: false;
      /** Sent to the encoder as the onStatus description. */
      reason: string;
      /** onStatus code suffix; default 'BadName' (what encoders report as a bad key). */
      status?: "BadName" | "Rejected";
    };

export interface PublishHandlers {
  /**
   * Called once per publish command, before NetStream.Publish.Start is sent
   * and before any media is read. A throw counts as a refusal (Rejected).
   * If the encoder disconnects while this is pending and it then returns a
   * sink, that sink immediately gets onClose('disconnect').
   */
  authorize(request: PublishRequest): Promise<AuthorizeResult>;
}

/**
 * Structured entries `{ event: 'rtmp.*', connection, ... }`. Entries an
 * operator should see carry `level: 'warn'` and a `msg` (connections refused
 * by a limit, a publisher over the bitrate cap); the rest are debug detail.
 */
export type RtmpLogger = (entry: Record<string, unknown>) => void;
