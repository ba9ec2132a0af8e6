/**
 * Step 1 of a transcode's result, "obtain source": the file the encoder reads, its object key (null for a file outside
 * DATA_DIR) and its size. Its own file so that each way of obtaining one (transcode-source.ts, clip-source.ts)
 * and the step that stores it (transcode-store.ts) share it without importing each other.
 */
export interface ObtainedSource {
  path: string;
  key: string | null;
  bytes: number;
}
