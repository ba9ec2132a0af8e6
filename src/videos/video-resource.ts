import { videoStatus } from "../../machines/video-machine.ts";
import { videoData, type VideoContext, type VideoStatus } from "../../machines/video-payload.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";

/** GET body of a video: the event `data` shape (spec 2.5/2.6) plus progress and bookkeeping. */
export function videoResource(record: ActorRecord<VideoContext>) {
  const status = videoStatus(record.value) as VideoStatus;
  const data = videoData(record.context, status);
  return {
    ...data,
    video: {
      ...data.video,
      progress: record.context.progress,
      source_url: record.context.sourceUrl,
      tags: record.context.tags,
      created_at: record.context.createdAt,
    },
  };
}
