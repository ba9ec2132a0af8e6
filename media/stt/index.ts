export { createTranscriber, sttUnavailableReason, type CreateTranscriberOptions } from "./create-transcriber.ts";
export { extractSpeechAudio, type ExtractOptions } from "./extract-audio.ts";
export { buildWebVtt, parseWebVtt, buildCues, formatVttTime, MAX_LINE_CHARS, type Cue } from "./webvtt.ts";
export { segmentWebVtt, firstSegmentPts, subtitleSegmentName, DEFAULT_MPEGTS, type SegmentedVtt } from "./segment-webvtt.ts";
export { summarize } from "./summarize.ts";
export { SttError, isSttError, type SttErrorCode } from "./errors.ts";
export type { SttLogger } from "./logger.ts";
export type * from "./types.ts";
