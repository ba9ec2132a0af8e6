/**
 * Errors of DRM packaging. The transcoder turns them into TranscodeErrors
 * (`PACKAGER_UNAVAILABLE`, `PACKAGING_FAILED`) so its callers check one type.
 */

/** No Shaka Packager binary for this platform (npm `shaka-packager` ships linux/osx x64+arm64, win x64). */
export class PackagerUnavailableError extends Error {
  override readonly name = "PackagerUnavailableError";
  readonly code = "PACKAGER_UNAVAILABLE";
}

/** The packager exited non-zero, wrote no usable output, or its MPD is not what we expect. */
export class PackagingFailedError extends Error {
  override readonly name = "PackagingFailedError";
  readonly code = "PACKAGING_FAILED";
  constructor(
    message: string,
    /** Last lines of the packager's log, the key already removed. */
    readonly logTail: string[] = [],
  ) {
    super(message);
  }
}

/** A key id or key that is not 32 hex digits. */
export class InvalidDrmKeyError extends Error {
  override readonly name = "InvalidDrmKeyError";
  readonly code = "INVALID_DRM_KEY";
}
