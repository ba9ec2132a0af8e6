// Type-checked (not run) by test/sdk-package.test.ts against the installed @vidlive/client (tsc, NodeNext).
import { createClient, parseWebhook, type Stream, type Video, verifyWebhook, type WebhookEvent, type WebhookEventOf } from "@vidlive/client";

const client = createClient({ baseUrl: "http://localhost:8080", apiKey: "sk_live_x_y" });

export async function video(id: string): Promise<string> {
  const { data, error } = await client.GET("/api/public/v1/videos/{id}/", { params: { path: { id } } });
  if (error) return error.error.code;
  const status: "TRANSCODING" | "COMPLETED" | "ERROR" = data.data.video.status;
  const thumbnail: string | null = data.data.video.thumbnail_url;
  const qualities: string[] = data.data.renditions.map((r) => r.quality);
  const named: Video = data.data;
  // @ts-expect-error: a Video is not a Stream
  const notStream: Stream = named;
  // @ts-expect-error: a video has no `colour`
  data.data.video.colour;
  // @ts-expect-error: `duration_seconds` is a number or null, not a string
  const wrong: string = data.data.video.duration_seconds;
  return `${status} ${thumbnail} ${qualities.join()} ${wrong} ${notStream}`;
}

export async function stream(): Promise<string | undefined> {
  const created = await client.POST("/api/public/v1/livestreams/", { body: { title: "Typed", latency: "LOW" } });
  // @ts-expect-error: `title` is required
  await client.POST("/api/public/v1/livestreams/", { body: { latency: "LOW" } });
  // @ts-expect-error: not a latency
  await client.POST("/api/public/v1/livestreams/", { body: { title: "x", latency: "FAST" } });
  // @ts-expect-error: no such path
  await client.GET("/api/public/v1/nothing/");
  return created.data?.data.stream.rtmp_url;
}

export function onDelivery(raw: string, headers: Headers, secret: string): string | null {
  if (!verifyWebhook({ body: raw, headers, secret, toleranceSeconds: 60 })) return null;
  // @ts-expect-error: one object, never positional arguments (either order)
  verifyWebhook(secret, headers.get("x-service-signature"), raw);
  // @ts-expect-error: the secret is required
  verifyWebhook({ body: raw, headers });
  const event: WebhookEvent = parseWebhook({ body: raw, headers, secret });
  if (event.event === "VIDEO_TRANSCODING_COMPLETED") return event.data.video.url;
  if (event.event === "LIVESTREAM_STARTED") return event.data.stream.hls_url;
  // @ts-expect-error: not an event name
  if (event.event === "VIDEO_EXPLODED") return null;
  return null;
}

export const failed: WebhookEventOf<"VIDEO_TRANSCODING_FAILED">["data"]["error"] = { code: "SOURCE_NOT_FOUND", message: "404" };
