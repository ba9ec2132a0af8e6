import type { Registry } from "prom-client";

/**
 * The two HTTP metrics (a request counter and a duration histogram, by method,
 * route template and status), counted in plain numbers on the request path and
 * turned into prom-client's samples only when scraped.
 *
 * Why not prom-client's own Counter and Histogram: even through cached label
 * children, each `inc()`/`observe()` hashes its label object again
 * (`fastHashObject`), which was ~9% of a cached API read's CPU (bench/api.ts
 * profile). Here a request costs one Map lookup, a short bucket scan and three
 * additions; a scrape builds the same samples prom-client would (cumulative
 * `le` buckets, `_sum`, `_count`), registered in the service's own Registry.
 */
export interface HttpSeries {
  observe(method: string, route: string, status: number, seconds: number): void;
}

interface Slot {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  buckets: Float64Array;
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };

export function createHttpSeries(registry: Registry, names: { requests: string; duration: string }, buckets: readonly number[]): HttpSeries {
  const slots = new Map<string, Slot>();
  const values = () => [...slots.values()];

  // The shape Registry reads from a metric (`name`, `get()` → { name, help, type, values, aggregator }).
  const counter = {
    name: names.requests,
    help: "HTTP requests answered, by method, route template and status.",
    type: "counter",
    aggregator: "sum",
    get: async () => ({ name: names.requests, help: counter.help, type: "counter", aggregator: "sum", values: values().map((s): Sample => ({ value: s.count, labels: s.labels })) }),
  };
  const histogram = {
    name: names.duration,
    help: "Time from the request reaching the app to its response headers, by method, route template and status.",
    type: "histogram",
    aggregator: "sum",
    get: async () => {
      const out: Sample[] = [];
      for (const s of values()) {
        let acc = 0;
        for (let i = 0; i <= buckets.length; i++) {
          acc += s.buckets[i]!;
          out.push({ value: acc, labels: { le: i < buckets.length ? buckets[i]! : "+Inf", ...s.labels }, metricName: `${names.duration}_bucket` });
        }
        out.push({ value: s.sum, labels: s.labels, metricName: `${names.duration}_sum` });
        out.push({ value: s.count, labels: s.labels, metricName: `${names.duration}_count` });
      }
      return { name: names.duration, help: histogram.help, type: "histogram", aggregator: "sum", values: out };
    },
  };
  registry.registerMetric(counter as never);
  registry.registerMetric(histogram as never);

  return {
    observe(method, route, status, seconds) {
      const key = `${method} ${status} ${route}`;
      let s = slots.get(key);
      if (!s) {
        s = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(buckets.length + 1) };
        slots.set(key, s);
      }
      let i = 0;
      while (i < buckets.length && seconds > buckets[i]!) i++;
      s.buckets[i]!++;
      s.count++;
      s.sum += seconds;
    },
  };
}
