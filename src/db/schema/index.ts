// Each domain keeps its tables in its own file; drizzle-kit reads them all from here.
export * from "./core.ts";
export * from "./work.ts";
export * from "./uploads.ts";
export * from "./webhooks.ts";
export * from "./live.ts";
export * from "./drm.ts";
export * from "./people.ts";
export * from "./playback.ts";
export * from "./analytics.ts";
