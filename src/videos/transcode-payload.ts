/** The `transcode` work's payload: where its source is. */
export interface TranscodePayload {
  uploadId?: string | null;
  /** A file on disk: a live recording, or a source the fetch stage wrote into the work dir. */
  sourcePath?: string;
  /** `sourcePath` is the fetch stage's copy (fetch again if it went missing). */
  fetched?: boolean;
}
