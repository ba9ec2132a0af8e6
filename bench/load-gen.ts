export {};
/**
 * A closed-loop HTTP load generator run as its own process, so it does not share
 * the event loop with the server under test. Prints one JSON line.
 * Usage: bun bench/load-gen.ts <url> <seconds> <concurrency> [header:value ...]
 */
const [url, secondsArg, concArg, ...headerArgs] = process.argv.slice(2);
if (!url) throw new Error("usage: load-gen.ts <url> <seconds> <concurrency> [header:value ...]");
const seconds = Number(secondsArg ?? 5);
const concurrency = Number(concArg ?? 32);
const headers: Record<string, string> = {};
for (const h of headerArgs) {
  const i = h.indexOf(":");
  headers[h.slice(0, i)] = h.slice(i + 1);
}
const latencies: number[] = [];
let errors = 0;
const end = performance.now() + seconds * 1000;
async function worker() {
  while (performance.now() < end) {
    const t0 = performance.now();
    try {
      const res = await fetch(url!, { headers });
      await res.arrayBuffer();
      if (res.status !== 200) errors++;
    } catch {
      errors++;
    }
    latencies.push(performance.now() - t0);
  }
}
const start = performance.now();
await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
console.log(JSON.stringify({ requests: latencies.length, errors, rps: latencies.length / elapsed, p50: q(0.5), p99: q(0.99) }));
