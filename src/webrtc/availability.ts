import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** What the service can say about its WebRTC media server before starting it. */
export type WebrtcAvailability = { available: true; workerBin: string } | { available: false; reason: string };

/**
 * Where mediasoup would spawn its worker from: `MEDIASOUP_WORKER_BIN` (mediasoup
 * honours the same variable), else `node_modules/mediasoup/worker/out/Release/`,
 * where `npm run setup:webrtc` puts the binary it builds. Null without the package.
 */
export function mediasoupWorkerPath(env: Record<string, string | undefined> = process.env): string | null {
  const override = env.MEDIASOUP_WORKER_BIN;
  if (override) return override;
  try {
    // .../mediasoup/node/lib/index.js → .../mediasoup
    const entry = createRequire(import.meta.url).resolve("mediasoup");
    return join(dirname(entry), "..", "..", "worker", "out", "Release", "mediasoup-worker");
  } catch {
    return null;
  }
}

/**
 * Whether a mediasoup worker can be spawned. `npm install` never builds it (its
 * postinstall is denied in package.json `allowScripts`: it downloads), so a plain
 * install reports unavailable until `npm run setup:webrtc` has run.
 */
export function webrtcAvailability(env: Record<string, string | undefined> = process.env): WebrtcAvailability {
  const workerBin = mediasoupWorkerPath(env);
  if (workerBin === null) return { available: false, reason: "the mediasoup package is not installed" };
  try {
    if (!statSync(workerBin).isFile()) return { available: false, reason: `${workerBin} is not a file` };
    accessSync(workerBin, constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "is not built" : code === "EACCES" ? "is not executable" : `cannot be used (${code ?? String(err)})`;
    return { available: false, reason: `the mediasoup worker ${workerBin} ${why}` };
  }
  return { available: true, workerBin };
}
