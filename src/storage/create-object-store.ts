import type { Config } from "../config.ts";
import { createLocalObjectStore } from "./local-object-store.ts";
import type { ObjectStore } from "./object-store.ts";
import { createS3ObjectStore } from "./s3-object-store.ts";
import { boundedObjectStore } from "./bounded-object-store.ts";

/** The object store STORAGE names: DATA_DIR itself (`local`, default) or the S3_* bucket (`s3`). */
export function createObjectStore(config: Pick<Config, "storage" | "s3" | "dataDir"> & Partial<Pick<Config, "storageTimeoutMs">>): ObjectStore {
  if (config.storage === "s3") {
    if (!config.s3) throw new Error("STORAGE=s3 needs S3_BUCKET");
    // A bucket that does not answer fails the call in bounded time (503 for a request, a retry for work).
    return boundedObjectStore(createS3ObjectStore(config.s3), config.storageTimeoutMs ?? 10_000);
  }
  return createLocalObjectStore(config.dataDir);
}
