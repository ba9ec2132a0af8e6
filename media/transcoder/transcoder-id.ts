import * as os from "node:os";
import type { Backend } from "./types.ts";

let counter = 0;

/**
 * `<backend>-<hostname>-<pid>-<n>`: tells operators which machine and process
 * handled a video (it is recorded as video.transcoder_id).
 */
export function createTranscoderId(backend: Backend): string {
  counter += 1;
  const host = os.hostname().replace(/[^A-Za-z0-9.-]/g, "_") || "host";
  return `${backend}-${host}-${process.pid}-${counter}`;
}
