/** Public surface of media/rtmp; everything else in this folder is internal. */
export { createRtmpServer } from "./rtmp-server.ts";
export type { RtmpConnectionStats, RtmpServer, RtmpServerOptions } from "./rtmp-server.ts";
export type {
  AuthorizeResult,
  CloseReason,
  MediaMessage,
  MediaMessageType,
  MediaSink,
  PublishHandlers,
  PublishRequest,
  RtmpLogger,
} from "./publish-handlers.ts";
export { publish } from "./rtmp-publisher.ts";
export type { Publication, PublishOptions, PublishStarted, PublishSummary } from "./rtmp-publisher.ts";
export { parseRtmpUrl } from "./rtmp-url.ts";
export type { PublisherUrlForm, RtmpConnectTarget } from "./rtmp-url.ts";
export { resolvePublishTarget } from "./publish-target.ts";
export type { PublishTarget, PublishTargetInput } from "./publish-target.ts";
export { amf0EcmaArray, decodeAmf0, encodeAmf0 } from "./amf0.ts";
export type { Amf0Object, Amf0Value } from "./amf0.ts";
export {
  Amf0DecodeError,
  Amf0EncodeError,
  RtmpConnectionClosedError,
  RtmpError,
  RtmpHandshakeError,
  RtmpMessageTooLargeError,
  RtmpProtocolError,
  RtmpPublishRejectedError,
  RtmpTimeoutError,
  RtmpUrlError,
} from "./errors.ts";
