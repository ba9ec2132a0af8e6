/**
 * Issue 26 item 2's figures, for bench/live.ts `--only outputs`: one
 * broadcast (the fixture looped at real time, `seconds` long) without
 * outputs, then one with 5 simulcast outputs (4 ffmpeg platforms on loopback
 * and 1 target that accepts the connection and never reads), `runs` times
 * each. Per run: the broadcast's own segment timing (the interval between
 * segments written and the keyframe → playlist delay, medians) and CPU
 * (the service process, and each output's ffmpeg sender from /proc).
 * Targets: segment timing with outputs within 5% of without; each output
 * under 3% of a core.
 */
import { readFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import type { Service } from "../src/service.ts";
import { freeTcpPort } from "../test/support/free-port.ts";

const TICKS = 100; // USER_HZ on Linux

/** utime + stime of a process in seconds (0 once it is gone). */
function cpuSecondsOf(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};

async function broadcast(service: Service, orgId: string, seconds: number, outputs: Array<{ url: string }>) {
  const org = (await service.orgs.getOrg(orgId))!;
  const targets = await service.live.outputs.prepare(outputs.map((o) => ({ url: o.url, stream_key: undefined, name: undefined })));
  const s = await service.live.livestreams.create(org, { title: `outputs ${outputs.length}` }, { within: (tx, id) => service.live.outputs.store.addIn(tx, id, org.id, targets) });
  const published: number[] = [];
  const delays: number[] = [];
  const off = service.live.onSegment((id, info) => {
    if (id !== s.id) return;
    published.push(info.publishedAtMs);
    delays.push(info.publishedAtMs - info.firstKeyframeArrivalMs);
  });
  const senders = new Map<string, number>();
  const sample = setInterval(() => {
    for (const st of service.live.outputs.runner.stats()) if (st.pid) senders.set(`${st.id}:${st.pid}`, cpuSecondsOf(st.pid));
  }, 250);
  const cpu0 = process.cpuUsage();
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "live-publishers.ts"), String(seconds), s.context.rtmpUrl], { stdout: "pipe", stderr: "inherit" });
  await new Response(proc.stdout).text();
  await proc.exited;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sample);
  const stats = service.live.outputs.runner.stats();
  off();
  await service.live.ingest.endExplicitly(s.context).catch(() => undefined);
  const intervals = published.slice(1).map((t, i) => t - published[i]!);
  return {
    intervalMs: median(intervals),
    delayMs: median(delays),
    serviceCpuShare: (cpu.user + cpu.system) / 1e6 / seconds,
    senderCpuShares: [...senders.values()].map((c) => c / seconds),
    skips: stats.reduce((n, x) => n + x.skips, 0),
  };
}

export async function benchOutputs(service: Service, orgId: string, opts: { runs: number; seconds: number }) {
  // The target that accepts and never reads.
  const stuck: Socket[] = [];
  const sink = createServer((sock) => {
    sock.pause();
    stuck.push(sock);
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const sinkPort = (sink.address() as { port: number }).port;
  console.log(`bench:live outputs  ${opts.runs} runs x ${opts.seconds} s, fixture 640x360 ~1 Mbps; with: 4 ffmpeg platforms + 1 target that never reads`);
  console.log("run | segment interval none / 5 outputs | kf->playlist none / 5 outputs | service CPU none / 5 outputs | CPU per output (sender ffmpeg) | skips");
  const ratios: number[] = [];
  const perOutput: number[] = [];
  try {
    for (let run = 1; run <= opts.runs; run++) {
      const none = await broadcast(service, orgId, opts.seconds, []);
      const ports = await Promise.all([1, 2, 3, 4].map(() => freeTcpPort()));
      const platforms = ports.map((p) =>
        Bun.spawn(["ffmpeg", "-v", "error", "-listen", "1", "-i", `rtmp://127.0.0.1:${p}/app/k`, "-c", "copy", "-f", "null", "-"], { stdout: "ignore", stderr: "ignore" }),
      );
      await Bun.sleep(500);
      const five = await broadcast(service, orgId, opts.seconds, [...ports.map((p) => ({ url: `rtmp://127.0.0.1:${p}/app/k` })), { url: `rtmp://127.0.0.1:${sinkPort}/app/k` }]);
      for (const p of platforms) p.kill(9);
      const ratio = Math.max(five.intervalMs / none.intervalMs, five.delayMs / none.delayMs);
      ratios.push(ratio);
      // What the outputs add to the service process, shared over 5, plus each sender's own CPU.
      const added = Math.max(0, five.serviceCpuShare - none.serviceCpuShare) / 5;
      const senders = five.senderCpuShares.length ? five.senderCpuShares : [0];
      const each = added + median(senders);
      perOutput.push(each);
      console.log(
        `${String(run).padStart(3)} | ${none.intervalMs.toFixed(0)} / ${five.intervalMs.toFixed(0)} ms | ${none.delayMs.toFixed(0)} / ${five.delayMs.toFixed(0)} ms | ${(none.serviceCpuShare * 100).toFixed(1)}% / ${(five.serviceCpuShare * 100).toFixed(1)}% | ${(each * 100).toFixed(2)}% of a core (senders ${senders.map((c) => (c * 100).toFixed(1)).join(", ")}%) | ${five.skips}`,
      );
    }
  } finally {
    for (const s of stuck) s.destroy();
    sink.close();
  }
  console.log(`median: segment timing with 5 outputs / without = ${median(ratios).toFixed(3)} (target <= 1.05); CPU per output ${(median(perOutput) * 100).toFixed(2)}% of a core (target < 3%)`);
}
