import type { Service } from "../service.ts";

/**
 * What the settings screen's sections may use: the same modules the REST
 * routes use (the screen calls the domain services directly, with the
 * session's organization, never through an API key).
 */
export type SettingsDeps = Pick<Service, "config" | "logger" | "database" | "runtime" | "orgs" | "rateLimiter" | "secret" | "store" | "objects" | "videos" | "live" | "webhooks" | "playback">;
