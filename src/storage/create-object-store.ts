import type { Config } from "../config.ts";
import { createLocalObjectStore } from "./local-object-store.ts";
import type { ObjectStore } from "./object-store.ts";
import { createS3ObjectStore } from "./s3-object-store.ts";

/** The object store STORAGE names: DATA_DIR itself (`local`, default) or the S3_* bucket (`s3`). */
export function createObjectStore(config: Pick<Config, "storage" | "s3" | "dataDir">): ObjectStore {
  if (config.storage === "s3") {
    if (!config.s3) throw new Error("STORAGE=s3 needs S3_BUCKET");
    return createS3ObjectStore(config.s3);
  }
  return createLocalObjectStore(config.dataDir);
}
