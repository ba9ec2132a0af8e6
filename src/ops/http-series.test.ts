import { expect, test } from "bun:test";
import { Registry } from "prom-client";
import { createHttpSeries } from "./http-series.ts";

test("requests and durations are scraped as prom-client would print them: cumulative le buckets, _sum, _count, per label set", async () => {
  const registry = new Registry();
  const http = createHttpSeries(registry, { requests: "t_requests_total", duration: "t_duration_seconds" }, [0.01, 0.1]);
  http.observe("GET", "/a/:id/", 200, 0.005);
  http.observe("GET", "/a/:id/", 200, 0.01); // on a bound: counted in that bucket (le is "less or equal")
  http.observe("GET", "/a/:id/", 200, 0.5);
  http.observe("GET", "/a/:id/", 404, 0.02);
  const text = await registry.metrics();
  const lines = text.split("\n");
  expect(lines).toContain('t_requests_total{method="GET",route="/a/:id/",status="200"} 3');
  expect(lines).toContain('t_requests_total{method="GET",route="/a/:id/",status="404"} 1');
  expect(lines).toContain('t_duration_seconds_bucket{le="0.01",method="GET",route="/a/:id/",status="200"} 2');
  expect(lines).toContain('t_duration_seconds_bucket{le="0.1",method="GET",route="/a/:id/",status="200"} 2');
  expect(lines).toContain('t_duration_seconds_bucket{le="+Inf",method="GET",route="/a/:id/",status="200"} 3');
  expect(lines).toContain('t_duration_seconds_count{method="GET",route="/a/:id/",status="200"} 3');
  expect(lines).toContain('t_duration_seconds_bucket{le="0.1",method="GET",route="/a/:id/",status="404"} 1');
  const sum = lines.find((l) => l.startsWith('t_duration_seconds_sum{method="GET",route="/a/:id/",status="200"}'));
  expect(Number(sum?.split(" ")[1])).toBeCloseTo(0.515, 6);
  expect(text).toContain("# TYPE t_requests_total counter");
  expect(text).toContain("# TYPE t_duration_seconds histogram");
  // The JSON form (what getMetricsAsJSON answers) has the same values.
  const json = await registry.getMetricsAsJSON();
  expect(json.find((m) => m.name === "t_requests_total")?.values.length).toBe(2);
});
