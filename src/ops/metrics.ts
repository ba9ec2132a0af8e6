import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { createHttpSeries } from "./http-series.ts";

/**
 * Every metric of one service instance, in its own Registry (never prom-client's
 * global one: tests run several services in one process, and two services must
 * not count into each other). Label values are bounded sets only: a route
 * template, a status code, a work type, a backend, an outcome. Never an
 * organization id or name, a video or stream id, or a raw URL (cardinality, and
 * one tenant's activity must not be readable by whoever scrapes).
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: "vidlive_" });
  // Bun does not implement monitorEventLoopDelay faithfully: its lag gauges read NaN (printed "Nan", which
  // Prometheus refuses) and a min of 9.2e9 s. Dropped rather than scraped as nonsense.
  for (const m of registry.getMetricsAsArray()) if (m.name.includes("eventloop_lag")) registry.removeSingleMetric(m.name);

  // Counted in plain numbers on the request path, sampled at scrape time (http-series.ts).
  const http = createHttpSeries(
    registry,
    { requests: "vidlive_http_requests_total", duration: "vidlive_http_request_duration_seconds" },
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  const jobDuration = new Histogram({
    name: "vidlive_job_duration_seconds",
    help: "Run time of one attempt of a work row in this process, by work type and outcome (done, next, deferred, retry, failed, cancelled, lost).",
    labelNames: ["type", "outcome"],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
    registers,
  });
  const transcodeRealtime = new Histogram({
    name: "vidlive_transcode_realtime_factor",
    help: "Seconds of media transcoded per wall-clock second (above 1: faster than real time), by backend.",
    labelNames: ["backend"],
    buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    registers,
  });
  const webhookAttempts = new Counter({
    name: "vidlive_webhook_deliveries_total",
    help: "Webhook delivery attempts made by this process, by outcome (success: a 2xx; failure: another status, a network error or a refused address; timeout: no answer in time).",
    labelNames: ["outcome"],
    registers,
  });
  // Every outcome has a series from the start: a rate over a missing series is no rate at all.
  for (const outcome of ["success", "failure", "timeout"]) webhookAttempts.labels(outcome).inc(0);

  return {
    registry,
    observeHttp(method: string, route: string, status: number, seconds: number): void {
      http.observe(method, route, status, seconds);
    },
    observeJob(type: string, outcome: string, seconds: number): void {
      jobDuration.labels(type, outcome).observe(seconds);
    },
    observeTranscode(backend: string, mediaSeconds: number, wallSeconds: number): void {
      if (mediaSeconds > 0 && wallSeconds > 0) transcodeRealtime.labels(backend).observe(mediaSeconds / wallSeconds);
    },
    observeWebhook(outcome: "success" | "failure" | "timeout"): void {
      webhookAttempts.labels(outcome).inc();
    },
    /** A gauge read at scrape time (`collect`), registered here. */
    gauge(opts: { name: string; help: string; labelNames?: string[]; collect: (this: Gauge) => void | Promise<void> }): Gauge {
      return new Gauge({ ...opts, labelNames: opts.labelNames ?? [], registers });
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
