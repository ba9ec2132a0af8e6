import { migrateVideo, VIDEO_MACHINE_VERSION, videoMachine, videoStatus } from "../../machines/video-machine.ts";
import type { ActorKindSpec } from "../actors/actor-kind-spec.ts";
import type { SecretGroup } from "../actors/context-secrets.ts";

/**
 * A video's secrets at rest (src/actors/context-secrets.ts; the stored forms every version since issue 9 wrote):
 * a recording's `stream.stream_key` becomes `stream.stream_key_sealed`; with encrypted downloads each rendition's
 * `download_password` is stored null and `outcome.download_passwords_sealed` holds them all.
 */
export const VIDEO_SECRETS: readonly SecretGroup[] = [
  { at: ["stream"], fields: ["stream_key"], sealedAs: "stream_key_sealed" },
  { at: ["outcome"], fields: ["renditions[].download_password"], sealedAs: "download_passwords_sealed", leave: "null" },
];

/** The video actor kind: its machine, stored version 2 (version 1 states read as they are: `migrateVideo`), its secrets. */
export const videoKind: ActorKindSpec<"video"> = { machine: videoMachine, version: VIDEO_MACHINE_VERSION, migrate: migrateVideo, statusOf: videoStatus, secrets: VIDEO_SECRETS };
