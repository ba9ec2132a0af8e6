/** The `transcode` work's payload: where its source is. */
export interface TranscodePayload {
  uploadId?: string | null;
  /** A file on disk: a live recording, or a source the fetch stage wrote into the work dir. */
  sourcePath?: string;
  /** `sourcePath` is the fetch stage's copy (fetch again if it went missing). */
  fetched?: boolean;
  /**
   * The fetched source's object key (`work/<video>/source.mp4`). `sourcePath` is absolute in the fetching
   * process's DATA_DIR: another process (its own DATA_DIR) cannot derive the key from it. Rows queued
   * before this field fall back to `sourcePath`.
   */
  sourceKey?: string;
}
