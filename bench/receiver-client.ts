import { join } from "node:path";

/**
 * The benches' HTTPS webhook receiver on its own thread
 * (bench/webhook-receiver-worker.ts), so receiving never competes with the
 * service's event loop. `drain()` answers what arrived since the last drain.
 */
export async function startReceiverWorker() {
  const worker = new Worker(join(import.meta.dir, "webhook-receiver-worker.ts"));
  const fromWorker = <T>(type: string) =>
    new Promise<T>((resolve) =>
      worker.addEventListener("message", function on(e) {
        if (e.data.type === type) {
          worker.removeEventListener("message", on);
          resolve(e.data);
        }
      }),
    );
  const started = fromWorker<{ port: number }>("started");
  worker.postMessage({ type: "start" });
  const { port } = await started;
  return {
    port,
    drain(): Promise<{ ids: string[]; at: number[] }> {
      const p = fromWorker<{ ids: string[]; at: number[] }>("arrivals");
      worker.postMessage({ type: "drain" });
      return p;
    },
    stop: () => worker.terminate(),
  };
}
