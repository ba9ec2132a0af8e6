// Run by test/sdk-package.test.ts with Node (no TypeScript loader): the packed @vidlive/client against a running service.
import { createClient, WEBHOOK_EVENT_NAMES } from "@vidlive/client";

const [baseUrl, apiKey] = process.argv.slice(2);
const client = createClient({ baseUrl, apiKey });
const org = await client.GET("/api/public/v1/organization/");
const videos = await client.GET("/api/public/v1/videos/", { params: { query: { limit: 5 } } });
const stream = await client.POST("/api/public/v1/livestreams/", { body: { title: "From Node" } });
const missing = await client.GET("/api/public/v1/videos/{id}/", { params: { path: { id: "vid_missing" } } });
const refused = await createClient({ baseUrl, apiKey: "sk_live_nope_nope" }).GET("/api/public/v1/organization/");
console.log(
  JSON.stringify({
    node: process.version,
    events: WEBHOOK_EVENT_NAMES.length,
    org: org.data?.data.organization.id,
    videos: videos.data?.data.items.length,
    stream: { status: stream.response.status, body: stream.data?.data.stream },
    missing: { status: missing.response.status, code: missing.error?.error.code },
    refused: refused.response.status,
  }),
);
