/**
 * The vocabulary the machines and the service share, in one place that imports nothing from `src/`: what a
 * machine hears (its events), what it asks of the world (effects: domain events, work, messages to other
 * actors), the work it may ask for with each payload, and the actor messages and timers the runtime delivers.
 * The machines import it; the service (src/actors, src/work, the modules) implements it. Payload shapes come
 * from the pure payload files beside it (video-payload.ts, livestream-payload.ts), which import nothing.
 */
import type { RecordingInfo } from "./livestream-payload.ts";
import type { TranscodeOutcome, TranscodePayload } from "./video-payload.ts";

/** What a machine emits for the outbox: an event name of spec section 6 and its `data`. */
export interface DomainEvent {
  type: "domain";
  event: string;
  data: Record<string, unknown>;
}

export type VideoEvent =
  /** The `fetch-source` work stored a URL's source: the transcode reads it from there. */
  | { type: "SOURCE_READY"; source: TranscodePayload }
  /** The transcode found no source (a fetched copy that went missing): fetched again from the video's URL. */
  | { type: "SOURCE_MISSING" }
  | { type: "TRANSCODING_STARTED"; transcoderId: string }
  | { type: "PROGRESS"; percent: number }
  /**
   * Issue 29 item 1: the ladder became playable while it is still transcoding (every rung's EVENT playlist has
   * its first segments stored and keeps ahead of a player at 1x): `url` is the master playlist's media URL.
   */
  | { type: "PLAYABLE"; url: string }
  | { type: "TRANSCODING_COMPLETED"; outcome: TranscodeOutcome }
  | { type: "TRANSCODING_FAILED"; error: { code: string; message: string } }
  /** A live stream holding this video as its recording asks whether the transcode has settled (answered by RECORDING_TRANSCODED). */
  | { type: "STREAM_ASKS_STATE"; streamId: string }
  /**
   * A failed video is tried again (`POST /videos/{id}/retry/`): back to its first stage, its error cleared:
   * transcoded again from `source` (an upload, a recording's file), fetched again from its URL without one.
   */
  | { type: "RETRY"; source?: TranscodePayload }
  | { type: "DELETE" };

export type StreamEvent =
  /** A publisher was accepted and its broadcast is leased by a process (the reconnect window, if any, is over). */
  | { type: "PUBLISH_STARTED" }
  /** The publisher disconnected: the reconnect window starts. */
  | { type: "PUBLISHER_LEFT" }
  /** The process holding the broadcast died (its lease lapsed): nobody can resume it, it is finalized. */
  | { type: "BROADCAST_LOST" }
  /** The service's own player downloaded and demuxed a segment. */
  | { type: "MEDIA_OBSERVED"; at: string }
  /** The broadcast was finalized: files closed, the recording (if any) registered. */
  | { type: "PIPELINE_ENDED"; at: string; durationSeconds: number | null; transcodingInSecs: number | null; recording: RecordingInfo | null }
  /** POST /livestreams/{id}/end/ */
  | { type: "END_REQUESTED"; at: string; durationSeconds: number | null }
  /** The recording of an explicitly ended stream entered the library. */
  | { type: "RECORDING_ATTACHED"; recording: RecordingInfo }
  /** The recording's transcode finished: COMPLETED (its HLS manifest) or failed / gone (null). */
  | { type: "RECORDING_TRANSCODED"; playbackUrl: string | null }
  /** The recording video was deleted: the stream no longer has a recording (no dead `playback_url`, no `recording.asset_id`). */
  | { type: "RECORDING_DELETED"; assetId: string }
  | { type: "FAIL"; at: string; error: { code: string; message: string } }
  /** A stored state of an older machine version was migrated: re-enter it so its timers are armed. */
  | { type: "UPGRADED" }
  | { type: "DELETE" };

/** The events each kind of actor accepts, by kind name: written out, not inferred, so machines may message each other without a type cycle. */
export interface ActorEvents {
  video: VideoEvent;
  livestream: StreamEvent;
}

export type ActorKindName = keyof ActorEvents;

/** A durable message to an actor (the payload of `actor-message` work). */
export type ActorMessage = { [K in ActorKindName]: { kind: K; actorId: string; event: ActorEvents[K] } }[ActorKindName];

/** A delayed event of an actor's own (`after`, delayed `raise`): fired by `actor-timer` work unless cancelled first. */
export interface ActorTimer {
  kind: ActorKindName;
  actorId: string;
  /** XState's send id (`xstate.after.<delay>.<state>` for `after`); `cancel` names it. */
  sendId: string;
  event: { type: string };
}

/** The work a machine may ask for, with its payload (each module's declaration gives its policy and handler). */
export interface MachineWork {
  /** Stream a URL source into the video's work dir; reported back as SOURCE_READY. */
  "fetch-source": Record<string, never>;
  /** Transcode a source already stored into the ladder. */
  transcode: TranscodePayload;
  /** Close a broadcast, register its recording and tell the stream: resumable, each step idempotent. */
  "live-finalize": { streamId: string; trigger: "pipeline" | "explicit" };
}

/** The work an actor's own runtime runs for it: its timers and messages from other actors. */
export interface ActorWork {
  "actor-timer": ActorTimer;
  "actor-message": ActorMessage;
}

/** One request for machine work: the type and its own payload, checked together. */
export type MachineWorkRequest = { [T in keyof MachineWork]: { type: T; payload: MachineWork[T] } }[keyof MachineWork];

/**
 * What a machine asks of the world besides its own state, as emitted events
 * the actor runtime turns into rows in the transition's own transaction:
 * a domain event → an outbox row; work → a work row (due after `delayMs`);
 * a message → a durable `actor-message` work row delivered to the other actor.
 * (Delayed events of the machine itself, `after` and delayed `raise`, become
 * timer rows without any help: the runtime reads XState's own actions.)
 */
export type WorkEffect = { type: "work"; work: MachineWorkRequest; delayMs?: number };
export type MessageEffect = { type: "message"; message: ActorMessage };
export type MachineEffect = DomainEvent | WorkEffect | MessageEffect;
