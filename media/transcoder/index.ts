export { createTranscoder, resolveBackend } from './create-transcoder.ts';
export { createNativeTranscoder } from './create-native-transcoder.ts';
export { createWasmTranscoder } from './create-wasm-transcoder.ts';
export { planLadder, widthForHeight } from './plan-ladder.ts';
export { planDownloads } from './plan-downloads.ts';
export { hasNativeFfmpeg } from './has-native-ffmpeg.ts';
export { TranscodeError, isTranscodeError, type TranscodeErrorCode } from './transcode-error.ts';
export { parseMasterPlaylist, parseMediaPlaylist } from './hls-playlist.ts';
export type * from './types.ts';
