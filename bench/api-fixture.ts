/**
 * The service bench:api and bench/api-cpu.ts load: everything a read route needs (100 videos, 100 streams, 20
 * endpoints), limits out of the way, listening on a random port.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import { loadConfig } from "../src/config.ts";
import { newId, randomToken } from "../src/ids.ts";
import { silentLogger } from "../src/log.ts";
import { createService, type Service } from "../src/service.ts";

export const PREFIX = "/api/public/v1";
export const SEED = 100;

export interface Full {
  service: Service;
  base: string;
  auth: Record<string, string>;
  ids: { video: string; stream: string };
  stop(): Promise<void>;
}

/** A service with everything a bench route needs: 100 videos, 100 streams, 20 endpoints; limits out of the way. */
export async function startFull(databaseUrl?: string): Promise<Full> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-api-"));
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: "0",
    RTMP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    LIVE_SLOTS: "100000000",
    LIVE_SLOTS_PER_ORG: "100000000",
    WEBHOOK_ENDPOINTS_PER_ORG: "100000000",
    ALLOW_PRIVATE_NETWORK: "1",
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const service = await createService(loadConfig(env), { logger: silentLogger, transcriber: null });
  const { org, apiKey } = await service.orgs.createOrg("bench");
  // Measure the limiter's cost, not its refusals.
  const big = 1_000_000_000;
  await service.orgs.updateSettings(org.id, (s) => ({
    ...s,
    limits: { ...s.limits, requestsPerMinute: big, livestreamsCreatePerMinute: big, videosCreatePerMinute: big, uploadUrlPerMinute: big },
  }));
  const { port } = await service.listen();
  const base = `http://127.0.0.1:${port}${PREFIX}`;
  const auth = { authorization: `Bearer ${apiKey}` };
  let video = "";
  for (let i = 0; i < SEED; i++) {
    video = newId("vid");
    await service.runtime.create("video", videoInput({ id: video, orgId: org.id, title: `Bench ${i}`, sourceUrl: `https://example.com/${randomToken(8)}.mp4`, createdAt: new Date().toISOString() }));
  }
  let stream = "";
  for (let i = 0; i < SEED; i++) {
    const res = await fetch(`${base}/livestreams/`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ title: `Bench ${i}` }) });
    if (res.status !== 201) throw new Error(`seed stream: ${res.status} ${await res.text()}`);
    stream = ((await res.json()) as any).data.stream.id;
  }
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${base}/webhooks/`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ url: `https://127.0.0.1:9/hook${i}`, events: ["VIDEO_TRANSCODING_COMPLETED"] }),
    });
    if (res.status !== 201) throw new Error(`seed endpoint: ${res.status} ${await res.text()}`);
  }
  return {
    service,
    base,
    auth,
    ids: { video, stream },
    async stop() {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
