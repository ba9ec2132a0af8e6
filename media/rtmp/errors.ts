/**
 * Named errors of the RTMP module. The server never lets one escape to its
 * caller: each closes only the connection it came from and is logged. The
 * publisher client rejects its promises with them.
 */

/** Base class, so callers can tell RTMP failures from their own bugs. */
export class RtmpError extends Error {
  override readonly name: string = "RtmpError";
}

/** The peer broke the wire protocol (bad chunk header, bad handshake, ...). */
export class RtmpProtocolError extends RtmpError {
  override readonly name: string = "RtmpProtocolError";
}

/** The C0 version byte was not 3, or the handshake arrived malformed. */
export class RtmpHandshakeError extends RtmpProtocolError {
  override readonly name = "RtmpHandshakeError";
}

/** A message header announced more bytes than `maxMessageBytes`. */
export class RtmpMessageTooLargeError extends RtmpProtocolError {
  override readonly name = "RtmpMessageTooLargeError";
  constructor(
    readonly length: number,
    readonly limit: number,
  ) {
    super(`message of ${length} bytes exceeds the limit of ${limit}`);
  }
}

/** AMF0 bytes we cannot (or refuse to) decode. */
export class Amf0DecodeError extends RtmpProtocolError {
  override readonly name = "Amf0DecodeError";
}

/** A value that has no AMF0 form (function, symbol, bigint, cyclic object...). */
export class Amf0EncodeError extends RtmpError {
  override readonly name = "Amf0EncodeError";
}

/** Client side: the URL is not `rtmp://host[:port]/app/key[?query]`. */
export class RtmpUrlError extends RtmpError {
  override readonly name = "RtmpUrlError";
}

/**
 * Client side: the server answered the publish (or connect) with an error
 * status such as NetStream.Publish.BadName or NetStream.Publish.Rejected.
 */
export class RtmpPublishRejectedError extends RtmpError {
  override readonly name = "RtmpPublishRejectedError";
  constructor(
    /** The onStatus / _error `code`, e.g. "NetStream.Publish.BadName". */
    readonly code: string,
    /** The server's human-readable `description` (our server puts the refusal reason here). */
    readonly description: string,
  ) {
    super(`publish refused: ${code}${description ? ` (${description})` : ""}`);
  }
}

/** Client side: the connection ended before the operation completed. */
export class RtmpConnectionClosedError extends RtmpError {
  override readonly name = "RtmpConnectionClosedError";
}

/** Client side: the server did not answer in time. */
export class RtmpTimeoutError extends RtmpError {
  override readonly name = "RtmpTimeoutError";
}
