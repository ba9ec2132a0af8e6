import { Elysia } from "elysia";
import { videoStatus } from "../../machines/video-machine.ts";
import { videoResource } from "../videos/video-resource.ts";
import { registerVideoInput, uploadUrlInput } from "../videos/video-schemas.ts";
import { videoClipInput } from "../videos/clip-schemas.ts";
import type { PageDeps } from "./deps.ts";
import { html } from "./html.ts";
import { notFoundPage } from "./not-found-page.ts";
import { csrfField, emptyState, type Flash, redirect, renderPage } from "./page.ts";
import { checked, checkOrgLimit, definedOnly, type FormBody, formOf, plausibleId, type Problem, problemOf, textOf } from "./section-support.ts";
import { requireAction, sessionGuard } from "./session-guard.ts";
import { can, type Member } from "./types.ts";
import { videoPage } from "./video-page-view.ts";
import { addVideoForms, videoList } from "./videos-view.ts";

const DONE: Record<string, Flash> = {
  uploaded: { kind: "success", message: "Video uploaded; it is transcoding (progress below)." },
  deleted: { kind: "success", message: "Video deleted with its files." },
  retried: { kind: "success", message: "Video queued again; it is transcoding (progress below)." },
};

const LIST_SIZE = 50;

const wantsJson = (request: Request) => (request.headers.get("accept") ?? "").includes("application/json");
const json = (body: unknown, status = 200) => Response.json(body, { status, headers: { "cache-control": "no-store" } });
/** The API's error envelope (spec 7.2), for the upload script. */
const jsonProblem = (p: Problem) => json({ success: false, error: { code: p.code, message: p.message, details: p.fields } }, p.status);
const DENIED: Problem = { status: 403, code: "PERMISSION_DENIED", message: "Your role cannot add or delete videos.", fields: {} };

/**
 * Issue 13 point 5: the video library. The same service calls as the REST
 * routes (src/videos/video-routes.ts): registerVideoInput and uploadUrlInput
 * validate, the per-organization limits count in the API's buckets, a DRM
 * video's licence URL is minted per page as GET /videos/{id}/ does.
 */
export function videosPages(deps: PageDeps<"videos" | "logger" | "rateLimiter">) {
  const { videos, uploads, drm } = deps.videos;
  const resource = (record: Parameters<typeof videoResource>[0]) => videoResource(record, { licenseUrl: (id) => drm.tokens.mint(id).url });
  const load = async (member: Member, id: string) => (plausibleId(id) ? await videos.get(member.org.id, id) : null);

  const listPage = async (member: Member, extra: { problem?: Problem | null; draft?: { source_url?: string; title?: string }; flash?: Flash; status?: number } = {}) => {
    const items = (await videos.list(member.org.id, { limit: LIST_SIZE })).map(resource);
    const options = {
      canManage: can(member.role, "videos.manage"),
      csrf: csrfField(member),
      csrfToken: member.csrfToken,
      drm: member.org.settings.features.drm,
      subtitles: videos.transcriptEngine() !== null,
      policy: member.org.settings.playback.policy,
      problem: extra.problem,
      draft: extra.draft,
    };
    return renderPage({ member, title: "Videos", active: "videos", flash: extra.flash, status: extra.status, body: html`${videoList(items, emptyState)}${addVideoForms(options)}` });
  };

  const detailPage = (member: Member, record: Parameters<typeof videoResource>[0], extra: { flash?: Flash; status?: number } = {}) => {
    const view = resource(record);
    const body = videoPage(view, { canManage: can(member.role, "videos.manage"), csrf: csrfField(member) });
    return renderPage({ member, title: view.video.title, active: "videos", flash: extra.flash, status: extra.status, body });
  };

  return (
    new Elysia({ name: "settings-videos" })
      .use(sessionGuard(deps))
      .get("/videos", ({ member, query }) => listPage(member, { flash: DONE[String(query.done ?? "")] }))
      .get("/videos/progress.json", async ({ member }) => {
        const records = await videos.list(member.org.id, { limit: LIST_SIZE });
        return json({ items: records.map((r) => ({ id: r.id, status: videoStatus(r.value), progress: r.context.progress })) });
      })
      .post("/videos/upload-url", async ({ member, body }) => {
        if (!can(member.role, "videos.manage")) return jsonProblem(DENIED);
        const form = formOf(body);
        try {
          await checkOrgLimit(deps, member, "/videos/upload-url/");
          const size = textOf(form.size_bytes);
          const input = uploadUrlInput.parse({ filename: textOf(form.filename), size_bytes: size === undefined ? undefined : Number(size) });
          videos.assertTranscoding(member.org);
          return json({ success: true, data: await uploads.create(member.org.id, input.size_bytes) }, 201);
        } catch (err) {
          return jsonProblem(problemOf(err));
        }
      })
      .post("/videos", async ({ member, body, request }) => {
        const asJson = wantsJson(request);
        if (!can(member.role, "videos.manage")) return asJson ? jsonProblem(DENIED) : requireAction(member, "videos.manage");
        const form = formOf(body);
        try {
          await checkOrgLimit(deps, member, "/videos/");
          const { record } = await videos.register(member.org, registerVideoInput.parse(registerBodyOf(form)));
          deps.logger.info("Video registered from the settings screen", { org_id: member.org.id, video_id: record.id, user_id: member.userId });
          return asJson ? json({ success: true, data: { id: record.id, url: `/settings/videos/${record.id}` } }, 201) : redirect(`/settings/videos/${record.id}`);
        } catch (err) {
          const problem = problemOf(err);
          if (asJson) return jsonProblem(problem);
          return listPage(member, { problem, draft: { source_url: textOf(form.source_url), title: textOf(form.title) }, status: problem.status });
        }
      })
      .get("/videos/:id", async ({ member, params, query }) => {
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "videos");
        return detailPage(member, record, { flash: DONE[String(query.done ?? "")] });
      })
      // Issue 24: a failed video tried again, as POST /videos/{id}/retry/ (same service call, same per-organization bucket).
      .post("/videos/:id/retry", async ({ member, params }) => {
        const denied = requireAction(member, "videos.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "videos");
        try {
          await checkOrgLimit(deps, member, `/videos/${record.id}/retry/`);
          videos.assertTranscoding(member.org);
          await videos.retry(member.org.id, record.id);
        } catch (err) {
          const problem = problemOf(err);
          return detailPage(member, (await load(member, record.id)) ?? record, { flash: { kind: "error", message: problem.message }, status: problem.status });
        }
        deps.logger.info("Video retried from the settings screen", { org_id: member.org.id, video_id: record.id, user_id: member.userId });
        return redirect(`/settings/videos/${record.id}?done=retried`);
      })
      // Issue 27: a clip, as POST /videos/{id}/clips/ (same service call, same per-organization bucket); opens the clip's page.
      .post("/videos/:id/clip", async ({ member, params, body }) => {
        const denied = requireAction(member, "videos.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "videos");
        const form = formOf(body);
        const num = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : Number(v));
        try {
          await checkOrgLimit(deps, member, `/videos/${record.id}/clips/`);
          const input = videoClipInput.parse({ start_time: num(textOf(form.start_time)), end_time: num(textOf(form.end_time)), title: textOf(form.title) || undefined });
          const clip = await videos.clip(member.org, record.id, input);
          deps.logger.info("Clip registered from the settings screen", { org_id: member.org.id, video_id: clip.id, source_video_id: record.id, user_id: member.userId });
          return redirect(`/settings/videos/${clip.id}`);
        } catch (err) {
          const problem = problemOf(err);
          const fields = Object.entries(problem.fields).map(([k, v]) => `${k} ${v}`);
          return detailPage(member, record, { flash: { kind: "error", message: fields.length ? `${problem.message} ${fields.join("; ")}` : problem.message }, status: problem.status });
        }
      })
      .get("/videos/:id/progress.json", async ({ member, params }) => {
        const record = await load(member, params.id);
        if (!record) return json({ success: false, error: { code: "NOT_FOUND", message: "Resource not found." } }, 404);
        return json({ id: record.id, status: videoStatus(record.value), progress: record.context.progress });
      })
      .post("/videos/:id/delete", async ({ member, params }) => {
        const denied = requireAction(member, "videos.manage");
        if (denied) return denied;
        const record = await load(member, params.id);
        if (!record) return notFoundPage(member, "videos");
        await videos.remove(member.org.id, record.id, deps.videos.cancelRunning);
        return redirect("/settings/videos?done=deleted");
      })
  );
}

/** The form as POST /videos/'s JSON body: checkboxes are booleans only when checked (unchecked: not given). */
function registerBodyOf(form: FormBody): Record<string, unknown> {
  return definedOnly({
    source_url: textOf(form.source_url) ?? "",
    title: textOf(form.title),
    subtitles: checked(form.subtitles) ? true : undefined,
    drm_enabled: checked(form.drm_enabled) ? true : undefined,
    playback_policy: textOf(form.playback_policy),
  });
}
