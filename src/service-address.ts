import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Config } from "./config.ts";

/**
 * Where the running service is, for the programs a user starts beside it
 * (`npm run demo`, `npm run cli -- listen|trigger|org create …`) in another
 * terminal, whose environment usually has no PORT or BASE_URL: `npm start`
 * writes its public address (BASE_URL, or http://localhost:PORT) to
 * `DATA_DIR/service-url` once it listens, and they read it when their own
 * environment names no address. Without the file (a service on another
 * machine, a fresh folder) they fall back to http://localhost:8080.
 */
export const SERVICE_URL_FILE = "service-url";
const API_SUFFIX = /\/api\/public\/v1\/*$/;

/** Called by main.ts once the service listens (so PORT=0 names the real port). */
export function recordServiceUrl(dataDir: string, baseUrl: string): void {
  writeFileSync(join(dataDir, SERVICE_URL_FILE), `${baseUrl}\n`, { mode: 0o600 });
}

/** The address the last `npm start` on this DATA_DIR recorded, if any. */
export function recordedServiceUrl(dataDir: string): string | undefined {
  try {
    const text = readFileSync(join(dataDir, SERVICE_URL_FILE), "utf8").trim();
    return /^https?:\/\/[^/\s]+/.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The service's origin from what a user may give as its address: the origin
 * (`http://localhost:8081`), or the API's base as the README's `$API` holds it
 * (`…/api/public/v1` or `…/api/public/v1/`). Trailing slashes dropped.
 */
export function serviceOrigin(url: string): string {
  return url.trim().replace(API_SUFFIX, "").replace(/\/+$/, "");
}

/**
 * The service a client program talks to: `VIDLIVE_API_URL` (with or without
 * the `/api/public/v1` suffix), else the address `npm start` recorded in
 * DATA_DIR (./data by default), else http://localhost:PORT (PORT, or 8080).
 */
export function clientServiceUrl(env: Record<string, string | undefined>): string {
  if (env.VIDLIVE_API_URL) return serviceOrigin(env.VIDLIVE_API_URL);
  return recordedServiceUrl(resolve(env.DATA_DIR || "./data")) ?? `http://localhost:${env.PORT || 8080}`;
}

/**
 * The public origin the operator CLI puts in links (owner and member setup
 * links): its own BASE_URL or PORT when its environment sets one (then it is
 * the operator's statement), else the address the service on this DATA_DIR
 * recorded, else the configuration's default.
 */
export function operatorBaseUrl(config: Config, env: Record<string, string | undefined>): string {
  if (env.BASE_URL || env.PORT) return config.baseUrl;
  return recordedServiceUrl(config.dataDir) ?? config.baseUrl;
}
