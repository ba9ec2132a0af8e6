import type { Config } from "./config.ts";

/**
 * Where this process can be reached once it listens (issue 25): the public
 * origin and the ports actually bound. The configuration is frozen before any
 * module is built, so a port of 0 (any free one: tests, benches) is never
 * written back into it; the listeners are read here instead, lazily, each
 * time a URL is made. Before a listener is bound its configured value stands.
 */
export interface BoundAddress {
  /** BASE_URL; with PORT=0, `http://127.0.0.1:<bound port>` once the HTTP listener is bound (public URLs name the real port). */
  readonly baseUrl: string;
  readonly httpPort: number;
  readonly rtmpPort: number;
  /** null with SRT_PORT=off, or while SRT does not listen and none was configured. */
  readonly srtPort: number | null;
}

/** What the listeners report, read at each use (undefined: not bound yet). */
export interface Listeners {
  http?: () => number | undefined;
  rtmp?: () => number | undefined;
  srt?: () => number | null | undefined;
}

export function createBoundAddress(config: Readonly<Pick<Config, "baseUrl" | "port" | "rtmpPort" | "srtPort">>): BoundAddress & { attach(listeners: Listeners): void } {
  let listeners: Listeners = {};
  return {
    /** Called once by the composition root (src/service.ts) with the listeners it owns. */
    attach(l: Listeners) {
      listeners = { ...listeners, ...l };
    },
    get httpPort() {
      return listeners.http?.() ?? config.port;
    },
    get baseUrl() {
      const bound = listeners.http?.();
      return config.port === 0 && bound !== undefined ? `http://127.0.0.1:${bound}` : config.baseUrl;
    },
    get rtmpPort() {
      return listeners.rtmp?.() ?? config.rtmpPort;
    },
    get srtPort() {
      return listeners.srt?.() ?? config.srtPort;
    },
  };
}

/**
 * The frozen configuration the modules are built with: every value as loaded,
 * except the public address fields, which read the bound address (so a
 * module's `config.baseUrl`, `config.rtmpPort` name the real listener). No
 * setter: nothing can write them, nor anything else (Object.freeze).
 */
export function frozenConfig(config: Config, address: BoundAddress): Readonly<Config> {
  const view = { ...config, s3: config.s3 ? Object.freeze({ ...config.s3 }) : null, webhookRetrySchedule: Object.freeze([...config.webhookRetrySchedule]) as number[] };
  Object.defineProperties(view, {
    baseUrl: { get: () => address.baseUrl, enumerable: true },
    rtmpPort: { get: () => address.rtmpPort, enumerable: true },
    srtPort: { get: () => address.srtPort, enumerable: true },
  });
  return Object.freeze(view);
}
