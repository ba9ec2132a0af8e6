import { accessSync, constants, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** Everything the process reads from the environment, with working defaults (DESIGN "Configuration"). */
export interface Config {
  port: number;
  hostname: string;
  rtmpPort: number;
  /** RTMP_HOST: the host name in `rtmp_url`; default BASE_URL's host name. */
  rtmpHost: string;
  /** SRT_PORT (UDP, one for every stream): default 9000, 0 picks a free port, `off` = no SRT ingest (null). */
  srtPort: number | null;
  dataDir: string;
  baseUrl: string;
  databaseUrl: string;
  databaseAuthToken: string | undefined;
  mediaBackend: "auto" | "wasm" | "native";
  liveSlots: number;
  /** LIVE_SLOTS_PER_ORG: slots (READY_TO_STREAM + LIVE) one organization may hold at once. */
  liveSlotsPerOrg: number;
  webhookRetrySchedule: number[];
  webhookTimeoutMs: number;
  /**
   * WEBHOOK_LEASE_MS: how long a process's claim on a webhook delivery lasts
   * unrenewed (renewed every third of it while held), so how soon other
   * processes on the database take over a crashed one's deliveries. Default:
   * the attempt timeout + 20 s.
   */
  webhookLeaseMs: number;
  /** WEBHOOK_ENDPOINTS_PER_ORG: live webhook endpoints one organization may register (default 20). */
  webhookEndpointsPerOrg: number;
  /** WEBHOOK_INFLIGHT_PER_ORG: webhook requests in flight for one organization at once (default 32). */
  webhookInflightPerOrg: number;
  allowPrivateNetwork: boolean;
  webhookCaFile: string | undefined;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** SECRET_KEY: required to be equal across processes sharing one database; else a key file in DATA_DIR. */
  secretKey: string | undefined;
  /** Transcoder worker count (wasm pool size and job concurrency); default: the number of cores. */
  transcodeWorkers: number;
  transcodeTimeoutMs: number;
  /** DRM_TOKEN_TTL_MS: how long a ClearKey licence token (`video.drm_license_url`) stays valid (default 24 h, at least 1 s). */
  drmTokenTtlMs: number;
  transcodeQueueLimit: number;
  jobLeaseMs: number;
  /** INFRA_RETRY_WINDOW_SECONDS: how long work failing on our own infrastructure (database, object store, disk) is retried without spending an attempt (default 900). */
  infraRetryWindowMs: number;
  sourceMaxBytes: number;
  sourceTimeoutMs: number;
  /** SOURCE_STALL_MS: a source that sends nothing for this long fails with SOURCE_FETCH_TIMEOUT. */
  sourceStallMs: number;
  /** SOURCE_FETCH_CONCURRENCY: source fetches running at once in this process (their own pool, not transcode workers). */
  sourceFetchConcurrency: number;
  /** SOURCE_FETCH_PER_ORG: source fetches one organization may have running at once; default half the pool. */
  sourceFetchPerOrg: number;
  uploadMaxBytes: number;
  /** UPLOAD_CONCURRENT_PER_ORG: unfinished resumable (tus) uploads one organization may hold at once (src/videos/tus-uploads.ts). */
  uploadConcurrentPerOrg: number;
  /** Rate-limit window; one minute per the spec. Shorter only to test Retry-After in seconds. */
  rateLimitWindowMs: number;
  /**
   * TRUST_PROXY: reverse-proxy hops in front of the service (0: none, the
   * socket's address is the client). With N > 0 the client address is the
   * Nth X-Forwarded-For entry from the right (http/client-address.ts).
   */
  trustProxy: number;
  /** A publisher that drops may come back within this window and resume the same broadcast. */
  liveReconnectMs: number;
  /** A READY_TO_STREAM stream that nobody publishes to is ended after this long. */
  liveIdleTimeoutMs: number;
  /** A booked stream becomes READY_TO_STREAM this long before `scheduled_at`. */
  liveScheduleLeadMs: number;
  /** RTMP_MAX_CONNECTIONS_PER_IP: open RTMP connections one client address (IPv4, or IPv6 /64) may hold; 0 = no limit. */
  rtmpMaxConnectionsPerIp: number;
  /** RTMP_PUBLISH_DEADLINE_MS: an RTMP connection that has not published this long after accept is closed; 0 = none. */
  rtmpPublishDeadlineMs: number;
  /** LIVE_MAX_BITRATE_KBPS: ingest bitrate cap per stream; a publisher over it is disconnected; 0 = none. */
  liveMaxBitrateKbps: number;
  /** LIVE_BROADCAST_LEASE_MS: how long a process's hold on a broadcast lasts unrenewed; a broadcast whose owner died is finalized this long after (default 10 s). */
  liveBroadcastLeaseMs: number;
  /** LIVE_FILES_RETENTION_MS: an ended stream's live HLS files (hls_url) are removed this long after its end (default 1 day). */
  liveFilesRetentionMs: number;
  /** RECORDING_PART_MS: with STORAGE=s3, the new bytes of a broadcast's FLV are uploaded this often as numbered parts, so another process can finalize it if the ingesting one dies (default 10 s). */
  recordingPartMs: number;
  /** LIVE_OUTPUTS_PER_STREAM: simulcast targets per stream (issue 26); the next is 422 `details.outputs` (default 5). */
  liveOutputsPerStream: number;
  /** WebRTC (issue 14): the WebRtcServer's UDP and TCP port (0 = a free one), its bind address, the address put in ICE candidates, viewers per stream. */
  webrtcPort: number;
  webrtcListenIp: string;
  webrtcAnnouncedIp: string;
  webrtcMaxViewersPerStream: number;
  /** OUTBOX_RETENTION_MS: outbox rows already fanned out are deleted this long after (default 7 days). */
  outboxRetentionMs: number;
  /** WEBHOOK_DELIVERY_RETENTION_MS: settled webhook deliveries (and their attempts) are deleted this long after creation (default 30 days). */
  webhookDeliveryRetentionMs: number;
  /** WORK_RETENTION_MS: finished work rows are deleted this long after they finished (default 7 days). */
  workRetentionMs: number;
  /** UPLOAD_RETENTION_MS: upload slots (and leftover files) are deleted this long after their URL expired, unless a video uses them (default 1 day). */
  uploadRetentionMs: number;
  /** DELETED_ACTOR_RETENTION_MS: soft-deleted videos and streams are deleted for good this long after (default 30 days). */
  deletedActorRetentionMs: number;
  /** RETENTION_INTERVAL_MS: time between retention sweeps (default 10 min). */
  retentionIntervalMs: number;
  /**
   * STORAGE: where durable files live. `local` (default): under DATA_DIR.
   * `s3`: an S3-compatible bucket (Bun's S3 client, `S3_*` variables); DATA_DIR
   * then holds only scratch space, so any process can serve and transcode.
   */
  storage: "local" | "s3";
  /** S3_ENDPOINT, S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION (Bun's names); only with STORAGE=s3. */
  s3: { endpoint?: string; bucket: string; accessKeyId?: string; secretAccessKey?: string; region?: string } | null;
  /**
   * RATE_LIMIT_STORE: `memory` counts in the process (exact for one process,
   * flushed to the database each second); `database` counts every request in
   * the database, exact across processes. Default: `database` when
   * DATABASE_URL names a server (libsql://, http(s)://, ws(s)://), else `memory`.
   */
  rateLimitStore: "memory" | "database";
  /** STT_MODEL_PATH: a whisper model file (optional); with it transcripts use whisper, else Debian's pocketsphinx if installed (media/stt). */
  sttModelPath: string | undefined;
  /**
   * REQUEST_TIMEOUT_MS: the longest a request waits for its answer (default
   * 15 s; 0 = unbounded); past it, 503 SERVICE_UNAVAILABLE with Retry-After.
   * Upload bodies (PUT, tus) are not bounded (src/http/request-deadline.ts).
   */
  requestTimeoutMs: number;
  /**
   * DATABASE_TIMEOUT_MS: the longest one request to a libSQL server may take
   * (default 10 s), and one write transaction in the process's queue; a
   * database that does not answer in time is "unavailable" (503, /readyz).
   */
  databaseTimeoutMs: number;
  /** STORAGE_TIMEOUT_MS: the longest one object-store call (stat, small put, delete, a list page) may take (default 10 s). */
  storageTimeoutMs: number;
  /** METRICS_TOKEN: when set, GET /metrics requires `Authorization: Bearer <token>`; unset, it is open (bind address and firewall decide who reaches it). */
  metricsToken: string | undefined;
  /**
   * SMTP_URL: where invitation mail goes (`smtp://user:pass@host:587`,
   * `smtps://…:465`; nodemailer's URL form). Set, invitation links are mailed
   * to the invited address and prove it; unset, they are shown to the inviter
   * and make an account of that organization only (docs/decisions.md).
   */
  smtpUrl: string | undefined;
  /** MAIL_FROM: the invitation's sender (default `vidlive <no-reply@BASE_URL's host>`). */
  mailFrom: string;
  /** BEACONS_PER_MINUTE_PER_ADDRESS: `POST /beacons/` bodies one client address (TRUST_PROXY aware; IPv6 by /64) may send per minute (default 1200: a NAT of many viewers). */
  beaconsPerMinutePerAddress: number;
  /** ANALYTICS_CLOSE_INTERVAL_MS: how often each process closes due views and rolls them up (default 2 s). */
  analyticsCloseIntervalMs: number;
  /** IMAGE_JOBS: image cuts (issue 27, src/images) running at once in this process (default: the cores); IMAGE_JOBS_PER_ORG: of one organization (default 1). */
  imageJobs: number;
  imageJobsPerOrg: number;
}

/** Roughly 1 min, 5 min, 25 min, 2 h, 10 h, 10 h: six retries after the first attempt. */
export const DEFAULT_RETRY_SCHEDULE = [60, 300, 1500, 7200, 36000, 36000];

const DAY_MS = 86_400_000;

export class ConfigError extends Error {
  override name = "ConfigError";
}

function int(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** A TCP port: 0 (any free one) to 65535. */
function portNumber(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const n = int(env, name, fallback);
  if (n > 65535) throw new ConfigError(`${name} must be a port number (0-65535), got "${env[name]}"`);
  return n;
}

/**
 * SECRET_KEY (or the key file's text) as bytes: hex, else base64; at least 32
 * bytes. Shared by loadConfig (a bad value is refused before anything is
 * created) and src/secrets/server-secret.ts (the key file).
 */
export function decodeSecretKey(value: string, source = "SECRET_KEY"): Buffer {
  const bytes = /^[0-9a-f]+$/i.test(value) ? Buffer.from(value, "hex") : Buffer.from(value, "base64");
  if (bytes.length < 32) throw new ConfigError(`${source} must hold at least 32 bytes (64 hex digits), got ${bytes.length}`);
  return bytes;
}

/** A DATABASE_URL without its query (libSQL URLs may carry `?authToken=`) or user info: safe to print. */
export function printableDatabaseUrl(url: string): string {
  if (url.startsWith("file:")) return url.split("?")[0]!;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return url.split("?")[0]!;
  }
}

/** A libSQL server URL must parse and name a host; `new URL` inside the client otherwise throws a bare TypeError. The URL is printed without its query (an auth token). */
function checkDatabaseUrl(url: string): void {
  if (!/^(file|libsql|https?|wss?):/.test(url)) throw new ConfigError(`DATABASE_URL must start with file:, libsql://, http(s):// or ws(s)://, got "${printableDatabaseUrl(url)}"`);
  if (url.startsWith("file:")) return;
  let host = "";
  try {
    host = new URL(url).hostname;
  } catch {}
  if (!host) throw new ConfigError(`DATABASE_URL must name a server (libsql://host:port), got "${printableDatabaseUrl(url)}"`);
}

/** WEBHOOK_CA_FILE is read when the webhook module is built: checked here so a wrong path is one line, not ENOENT with a stack. */
function checkCaFile(file: string | undefined): void {
  if (!file) return;
  let text: string;
  try {
    accessSync(file, constants.R_OK);
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(`WEBHOOK_CA_FILE cannot be read: ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (!text.includes("-----BEGIN CERTIFICATE-----")) throw new ConfigError(`WEBHOOK_CA_FILE must hold a PEM certificate (-----BEGIN CERTIFICATE-----): ${file}`);
}

/** BASE_URL's host name (checked to be a URL: a bad one is one configuration line, not a TypeError). */
function hostOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).hostname;
  } catch {
    throw new ConfigError(`BASE_URL must be an http(s) URL, got "${baseUrl}"`);
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = portNumber(env, "PORT", 8080);
  const rtmpPort = portNumber(env, "RTMP_PORT", 1935);
  const srtPort = env.SRT_PORT === "off" ? null : portNumber(env, "SRT_PORT", 9000);
  const dataDir = resolve(env.DATA_DIR || "./data");
  const backend = (env.MEDIA_BACKEND || "auto") as Config["mediaBackend"];
  if (!["auto", "wasm", "native"].includes(backend)) throw new ConfigError(`MEDIA_BACKEND must be auto, wasm or native, got "${backend}"`);
  const schedule = env.WEBHOOK_RETRY_SCHEDULE
    ? env.WEBHOOK_RETRY_SCHEDULE.split(",").map((s) => {
        const n = Number(s.trim());
        if (!Number.isFinite(n) || n < 0) throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds, got "${env.WEBHOOK_RETRY_SCHEDULE}"`);
        return n;
      })
    : DEFAULT_RETRY_SCHEDULE;
  const logLevel = (env.LOG_LEVEL || "info") as Config["logLevel"];
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be debug, info, warn, error or silent, got "${logLevel}"`);
  const webhookTimeoutMs = int(env, "WEBHOOK_TIMEOUT_MS", 10_000);
  const webhookLeaseMs = int(env, "WEBHOOK_LEASE_MS", webhookTimeoutMs + 20_000);
  if (webhookLeaseMs < 100) throw new ConfigError(`WEBHOOK_LEASE_MS must be at least 100, got "${env.WEBHOOK_LEASE_MS}"`);
  const storage = (env.STORAGE || "local") as Config["storage"];
  if (!["local", "s3"].includes(storage)) throw new ConfigError(`STORAGE must be local or s3, got "${storage}"`);
  const databaseUrl = env.DATABASE_URL || `file:${join(dataDir, "service.db")}`;
  // Checked here so a typo is one line at start-up (issue 16), not a libSQL stack trace.
  checkDatabaseUrl(databaseUrl);
  if (env.SECRET_KEY) decodeSecretKey(env.SECRET_KEY);
  checkCaFile(env.WEBHOOK_CA_FILE || undefined);
  if (env.BASE_URL && !/^https?:\/\/[^/\s]+/.test(env.BASE_URL)) throw new ConfigError(`BASE_URL must be an http(s) URL, got "${env.BASE_URL}"`);
  const baseUrl = (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, "");
  // The host encoders reach: RTMP_HOST, else BASE_URL's (the service's public name), so `rtmp_url` is right behind one name.
  const rtmpHost = env.RTMP_HOST || hostOf(baseUrl);
  if (env.SMTP_URL && !/^smtps?:\/\/[^/\s]+/.test(env.SMTP_URL)) throw new ConfigError("SMTP_URL must be an smtp:// or smtps:// URL");
  const rateLimitStore = (env.RATE_LIMIT_STORE || (databaseUrl.startsWith("file:") ? "memory" : "database")) as Config["rateLimitStore"];
  if (!["memory", "database"].includes(rateLimitStore)) throw new ConfigError(`RATE_LIMIT_STORE must be memory or database, got "${rateLimitStore}"`);
  return {
    port,
    hostname: env.HOST || "0.0.0.0",
    rtmpPort,
    rtmpHost,
    srtPort,
    dataDir,
    baseUrl,
    databaseUrl,
    databaseAuthToken: env.DATABASE_AUTH_TOKEN || undefined,
    mediaBackend: backend,
    requestTimeoutMs: int(env, "REQUEST_TIMEOUT_MS", 15_000),
    databaseTimeoutMs: Math.max(1000, int(env, "DATABASE_TIMEOUT_MS", 10_000)),
    storageTimeoutMs: Math.max(1000, int(env, "STORAGE_TIMEOUT_MS", 10_000)),
    liveSlots: int(env, "LIVE_SLOTS", 100),
    liveSlotsPerOrg: int(env, "LIVE_SLOTS_PER_ORG", 10),
    webhookRetrySchedule: schedule,
    webhookTimeoutMs,
    webhookLeaseMs,
    webhookEndpointsPerOrg: int(env, "WEBHOOK_ENDPOINTS_PER_ORG", 20),
    webhookInflightPerOrg: Math.max(1, int(env, "WEBHOOK_INFLIGHT_PER_ORG", 32)),
    allowPrivateNetwork: env.ALLOW_PRIVATE_NETWORK === "1" || env.ALLOW_PRIVATE_NETWORK === "true",
    webhookCaFile: env.WEBHOOK_CA_FILE || undefined,
    logLevel,
    secretKey: env.SECRET_KEY || undefined,
    transcodeWorkers: int(env, "TRANSCODE_WORKERS", Math.max(1, navigator.hardwareConcurrency || 1)),
    transcodeTimeoutMs: int(env, "TRANSCODE_TIMEOUT_MS", 6 * 60 * 60 * 1000),
    drmTokenTtlMs: Math.max(1000, int(env, "DRM_TOKEN_TTL_MS", DAY_MS)),
    transcodeQueueLimit: int(env, "TRANSCODE_QUEUE_LIMIT", 10_000),
    jobLeaseMs: int(env, "JOB_LEASE_MS", 30_000),
    infraRetryWindowMs: int(env, "INFRA_RETRY_WINDOW_SECONDS", 900) * 1000,
    sourceMaxBytes: int(env, "SOURCE_MAX_BYTES", 20 * 1024 ** 3),
    sourceTimeoutMs: int(env, "SOURCE_TIMEOUT_MS", 30 * 60 * 1000),
    sourceStallMs: int(env, "SOURCE_STALL_MS", 30_000),
    sourceFetchConcurrency: Math.max(1, int(env, "SOURCE_FETCH_CONCURRENCY", 8)),
    sourceFetchPerOrg: Math.max(1, int(env, "SOURCE_FETCH_PER_ORG", Math.ceil(Math.max(1, int(env, "SOURCE_FETCH_CONCURRENCY", 8)) / 2))),
    uploadMaxBytes: int(env, "UPLOAD_MAX_BYTES", 20 * 1024 ** 3),
    uploadConcurrentPerOrg: Math.max(1, int(env, "UPLOAD_CONCURRENT_PER_ORG", 20)),
    rateLimitWindowMs: int(env, "RATE_LIMIT_WINDOW_MS", 60_000),
    trustProxy: Math.min(10, int(env, "TRUST_PROXY", 0)),
    liveReconnectMs: int(env, "LIVE_RECONNECT_MS", 10_000),
    liveIdleTimeoutMs: int(env, "LIVE_IDLE_TIMEOUT_MS", 60 * 60 * 1000),
    liveScheduleLeadMs: int(env, "LIVE_SCHEDULE_LEAD_MS", 5 * 60 * 1000),
    rtmpMaxConnectionsPerIp: int(env, "RTMP_MAX_CONNECTIONS_PER_IP", 20),
    rtmpPublishDeadlineMs: int(env, "RTMP_PUBLISH_DEADLINE_MS", 10_000),
    liveMaxBitrateKbps: int(env, "LIVE_MAX_BITRATE_KBPS", 20_000),
    liveBroadcastLeaseMs: Math.max(300, int(env, "LIVE_BROADCAST_LEASE_MS", 10_000)),
    liveFilesRetentionMs: int(env, "LIVE_FILES_RETENTION_MS", DAY_MS),
    recordingPartMs: Math.max(100, int(env, "RECORDING_PART_MS", 10_000)),
    liveOutputsPerStream: Math.max(0, int(env, "LIVE_OUTPUTS_PER_STREAM", 5)),
    webrtcPort: portNumber(env, "WEBRTC_PORT", 8443),
    // Loopback unless a public address is announced: a reply from a wildcard socket leaves by another source address than the one a local client sent to, and ICE drops it.
    webrtcListenIp: env.WEBRTC_LISTEN_IP || (env.WEBRTC_ANNOUNCED_IP ? "0.0.0.0" : "127.0.0.1"),
    webrtcAnnouncedIp: env.WEBRTC_ANNOUNCED_IP || "127.0.0.1",
    webrtcMaxViewersPerStream: int(env, "WEBRTC_MAX_VIEWERS_PER_STREAM", 500),
    outboxRetentionMs: int(env, "OUTBOX_RETENTION_MS", 7 * DAY_MS),
    webhookDeliveryRetentionMs: int(env, "WEBHOOK_DELIVERY_RETENTION_MS", 30 * DAY_MS),
    workRetentionMs: int(env, "WORK_RETENTION_MS", 7 * DAY_MS),
    uploadRetentionMs: int(env, "UPLOAD_RETENTION_MS", DAY_MS),
    deletedActorRetentionMs: int(env, "DELETED_ACTOR_RETENTION_MS", 30 * DAY_MS),
    retentionIntervalMs: Math.max(1000, int(env, "RETENTION_INTERVAL_MS", 10 * 60_000)),
    storage,
    s3: storage === "s3" ? s3Config(env) : null,
    rateLimitStore,
    sttModelPath: env.STT_MODEL_PATH || undefined,
    metricsToken: env.METRICS_TOKEN || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || `vidlive <no-reply@${new URL(env.BASE_URL || "http://localhost").hostname}>`,
    beaconsPerMinutePerAddress: Math.max(1, int(env, "BEACONS_PER_MINUTE_PER_ADDRESS", 1200)),
    analyticsCloseIntervalMs: Math.max(100, int(env, "ANALYTICS_CLOSE_INTERVAL_MS", 2000)),
    imageJobs: Math.max(1, int(env, "IMAGE_JOBS", Math.max(1, navigator.hardwareConcurrency || 1))),
    imageJobsPerOrg: Math.max(1, int(env, "IMAGE_JOBS_PER_ORG", 1)),
  };
}

/** Bun's S3 variable names (S3_* first, then the AWS_* ones Bun also reads). */
function s3Config(env: Record<string, string | undefined>): NonNullable<Config["s3"]> {
  const bucket = env.S3_BUCKET || env.AWS_BUCKET;
  if (!bucket) throw new ConfigError("STORAGE=s3 needs S3_BUCKET");
  const endpoint = env.S3_ENDPOINT || env.AWS_ENDPOINT || undefined;
  // Bun's client takes any string and fails on the first request (readyz, an upload): refuse a non-URL here.
  if (endpoint && !/^https?:\/\/[^/\s]+/.test(endpoint)) throw new ConfigError(`S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  const accessKeyId = env.S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY || undefined;
  // One without the other signs nothing valid: every request would be refused as unauthenticated.
  if (!accessKeyId !== !secretAccessKey) throw new ConfigError("S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together");
  return { endpoint, bucket, accessKeyId, secretAccessKey, region: env.S3_REGION || env.AWS_REGION || undefined };
}
