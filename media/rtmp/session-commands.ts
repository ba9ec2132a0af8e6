/**
 * The NetConnection / NetStream commands of one server-side RTMP connection:
 * connect → createStream → publish (authorize) → unpublish, and the replies
 * and onStatus messages encoders wait for (also the bitrate refusal: every
 * NetConnection / NetStream code lives here). RtmpSession decodes command
 * messages and hands them here; byte and message ordering, media delivery and
 * the connection's end stay with the session (see CommandHost).
 */
import type { Amf0Object, Amf0Value } from "./amf0.ts";
import type { BitrateMeter } from "./bitrate-meter.ts";
import { setPeerBandwidthMessage, streamBeginMessage } from "./control-messages.ts";
import { Amf0DecodeError, RtmpProtocolError } from "./errors.ts";
import type { MessageChannel } from "./message-channel.ts";
import { ChunkStreamId, type RtmpMessage } from "./message-types.ts";
import type { AuthorizeResult, CloseReason, MediaSink, PublishHandlers, PublishRequest, RtmpLogger } from "./publish-handlers.ts";
import { resolvePublishTarget } from "./publish-target.ts";

/** What the commands need from their session. */
export interface CommandHost {
  readonly id: number;
  readonly remoteAddress: string;
  /** The session has ended (any reason). */
  isClosed(): boolean;
  /**
   * authorize said yes: media goes to `sink` from now on. False if the
   * session ended while authorize was pending (the sink has then been told).
   */
  startPublishing(sink: MediaSink): boolean;
  /** Ends the session; `graceful` lets queued replies (a refusal's reason) flush first. */
  end(reason: CloseReason, graceful: boolean): void;
}

export interface CommandOptions {
  /** Our outgoing chunk size, announced right after connect. */
  outChunkSize: number;
  /** Window Acknowledgement Size and Set Peer Bandwidth we announce. */
  ackWindow: number;
  /** createStream calls allowed per connection (a publisher needs one). */
  maxStreams: number;
}

type CommandPhase = "awaiting-connect" | "connected" | "authorizing" | "publishing";

const FMS_VERSION = "FMS/3,0,1,123";

export class SessionCommands {
  private phase: CommandPhase = "awaiting-connect";
  private app = "";
  private tcUrl = "";
  private nextStreamId = 1;
  private fcPublishSeen = false;
  private publishStreamId = 0;
  private publishRequest: PublishRequest | null = null;
  /** From authorize (e.g. stream_id): added to our log entries about this publish. */
  private publishLogTags: Record<string, unknown> = {};

  constructor(
    private readonly host: CommandHost,
    private readonly channel: MessageChannel,
    private readonly handlers: PublishHandlers,
    private readonly options: CommandOptions,
    private readonly log: RtmpLogger,
  ) {}

  /** What the publish command asked for, once one arrived (accepted or not). */
  get request(): PublishRequest | null {
    return this.publishRequest;
  }

  /** What authorize asked to be added to log entries about this publish (empty until accepted). */
  get logTags(): Record<string, unknown> {
    return this.publishLogTags;
  }

  /** One decoded command message. Returns a promise when processing must wait for it (authorize). */
  handle(message: RtmpMessage, values: Amf0Value[]): Promise<unknown> | void {
    const [name, transactionId, , ...args] = values;
    if (typeof name !== "string") throw new Amf0DecodeError("command without a name");
    const txn = typeof transactionId === "number" ? transactionId : 0;
    if (name !== "connect" && this.phase === "awaiting-connect") throw new RtmpProtocolError(`${name} before connect`);
    switch (name) {
      case "connect":
        return this.onConnect(txn, values[2]);
      case "releaseStream":
      case "FCPublish":
        // Answered so clients that track every transaction are satisfied; onFCPublish waits for authorization.
        if (name === "FCPublish") this.fcPublishSeen = true;
        if (txn > 0) this.channel.sendAmf0Command(ChunkStreamId.command, 0, ["_result", txn, null, undefined]);
        return;
      case "createStream": {
        if (this.nextStreamId > this.options.maxStreams) throw new RtmpProtocolError("too many createStream calls");
        const streamId = this.nextStreamId++;
        this.channel.sendAmf0Command(ChunkStreamId.command, 0, ["_result", txn, null, streamId]);
        return;
      }
      case "publish":
        return this.onPublish(message.streamId, args[0], args[1]);
      case "FCUnpublish":
      case "deleteStream":
      case "closeStream":
        return this.onUnpublish(name);
      case "play":
      case "play2":
        this.sendStatus(message.streamId, "error", "NetStream.Play.Failed", "this server accepts publishing only");
        this.log({ event: "rtmp.play.refused", connection: this.host.id });
        return this.host.end("error", true);
      case "_result":
      case "_error":
      case "onStatus":
      case "_checkbw":
      case "getStreamLength":
        return;
      default:
        if (txn > 0) {
          this.channel.sendAmf0Command(ChunkStreamId.command, 0, ["_error", txn, null, { level: "error", code: "NetConnection.Call.Failed", description: `unknown command ${name.slice(0, 64)}` }]);
        }
        return;
    }
  }

  /** Over the cap: tell the encoder why (ffmpeg prints it), log it for the operator, disconnect. */
  refuseOverBitrate(meter: BitrateMeter, now: number): void {
    const description = `Bitrate above the ${meter.limitKbps} kbps limit of this server.`;
    this.sendStatus(this.publishStreamId, "error", "NetStream.Publish.Rejected", description);
    this.log({
      ...this.publishLogTags,
      event: "rtmp.bitrate.exceeded",
      level: "warn",
      msg: "Publisher disconnected: bitrate above the limit",
      connection: this.host.id,
      remoteAddress: this.host.remoteAddress,
      limitKbps: meter.limitKbps,
      measuredKbps: meter.measuredKbps(now),
      measuredOverMs: meter.measuredOverMs(now),
    });
    this.host.end("bitrate", true);
  }

  private onConnect(txn: number, commandObject: Amf0Value): void {
    if (this.phase !== "awaiting-connect") throw new RtmpProtocolError("second connect on one connection");
    if (!isObject(commandObject)) throw new RtmpProtocolError("connect without a command object");
    this.app = typeof commandObject.app === "string" ? commandObject.app : "";
    this.tcUrl = typeof commandObject.tcUrl === "string" ? commandObject.tcUrl : "";
    this.phase = "connected";
    this.channel.announceAckWindow(this.options.ackWindow);
    this.channel.sendMessage(setPeerBandwidthMessage(this.options.ackWindow, 2));
    this.channel.setOutgoingChunkSize(this.options.outChunkSize);
    this.channel.sendAmf0Command(ChunkStreamId.command, 0, [
      "_result",
      txn,
      { fmsVer: FMS_VERSION, capabilities: 31 },
      { level: "status", code: "NetConnection.Connect.Success", description: "Connection succeeded.", objectEncoding: 0 },
    ]);
    this.log({ event: "rtmp.connect", connection: this.host.id, app: this.app, tcUrl: this.tcUrl });
  }

  private onPublish(streamId: number, nameValue: Amf0Value, typeValue: Amf0Value): Promise<unknown> | void {
    if (this.phase !== "connected") throw new RtmpProtocolError(`publish in phase ${this.phase}`);
    const name = typeof nameValue === "string" ? nameValue : "";
    const target = resolvePublishTarget({ app: this.app, name, tcUrl: this.tcUrl });
    const request: PublishRequest = {
      app: target.app,
      streamKey: target.streamKey,
      query: target.query,
      publishType: typeof typeValue === "string" ? typeValue : "live",
      remoteAddress: this.host.remoteAddress,
      raw: { app: this.app, name, tcUrl: this.tcUrl },
    };
    this.publishRequest = request;
    this.publishStreamId = streamId;
    if (target.streamKey === "") return this.refuse("BadName", "missing stream key");
    this.phase = "authorizing";
    this.log({ event: "rtmp.publish.request", connection: this.host.id, app: request.app, streamKey: redact(request.streamKey) });
    let decision: Promise<AuthorizeResult>;
    try {
      decision = Promise.resolve(this.handlers.authorize(request));
    } catch (error) {
      decision = Promise.reject(error);
    }
    return decision.then(
      (result) => this.onAuthorized(result),
      (error: unknown) => {
        this.log({ event: "rtmp.authorize.error", connection: this.host.id, error: String(error) });
        if (!this.host.isClosed()) this.refuse("Rejected", "internal error");
      },
    );
  }

  private onAuthorized(result: AuthorizeResult): void {
    if (!result.ok) {
      if (!this.host.isClosed()) this.refuse(result.status ?? "BadName", result.reason);
      return;
    }
    if (!this.host.startPublishing(result.sink)) return;
    this.publishLogTags = { ...result.logTags };
    this.phase = "publishing";
    const streamId = this.publishStreamId;
    this.channel.sendMessage(streamBeginMessage(streamId));
    if (this.fcPublishSeen) {
      this.channel.sendAmf0Command(ChunkStreamId.command, 0, ["onFCPublish", 0, null, { code: "NetStream.Publish.Start", description: "Publishing started." }]);
    }
    this.sendStatus(streamId, "status", "NetStream.Publish.Start", "Publishing started.");
    this.log({ event: "rtmp.publish.start", connection: this.host.id, streamKey: redact(this.publishRequest!.streamKey) });
  }

  private refuse(status: "BadName" | "Rejected", reason: string): void {
    this.sendStatus(this.publishStreamId, "error", `NetStream.Publish.${status}`, reason);
    this.log({ event: "rtmp.publish.refused", connection: this.host.id, status, reason, streamKey: redact(this.publishRequest?.streamKey ?? "") });
    // No sink exists, so no onClose; the reason only matters for the log.
    this.host.end("error", true);
  }

  private onUnpublish(command: string): void {
    if (this.phase !== "publishing") return;
    if (command === "FCUnpublish") {
      this.channel.sendAmf0Command(ChunkStreamId.command, 0, ["onFCUnpublish", 0, null, { code: "NetStream.Unpublish.Success", description: "" }]);
    }
    this.sendStatus(this.publishStreamId, "status", "NetStream.Unpublish.Success", "Stopped publishing.");
    this.host.end("unpublish", true);
  }

  private sendStatus(streamId: number, level: "status" | "error", code: string, description: string): void {
    this.channel.sendAmf0Command(ChunkStreamId.streamCommand, streamId, ["onStatus", 0, null, { level, code, description }]);
  }
}

function isObject(value: Amf0Value): value is Amf0Object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Stream keys are secrets: logs get a recognisable prefix only. */
function redact(key: string): string {
  return key.length <= 4 ? "****" : `${key.slice(0, 4)}…`;
}
