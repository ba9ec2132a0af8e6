import { Elysia, t } from "elysia";
import { API_PREFIX, apiContext } from "../../http/api-context.ts";
import { ApiError } from "../../http/api-error.ts";
import { success } from "../../http/envelope.ts";
import { DeletedSchema, doc } from "../../http/openapi-docs.ts";
import type { LivestreamService } from "../livestream-service.ts";
import { outputInput, prepareOutputs } from "./output-input.ts";
import { OutputAnswerSchema, OutputListSchema } from "./output-schemas.ts";
import { outputView, type OutputStore } from "./output-store.ts";

const tags = ["Live streams"];
const streamParams = t.Object({ id: t.String({ description: "The stream's id." }) });
const outputParams = t.Object({ id: t.String({ description: "The stream's id." }), output_id: t.String({ description: "The output's id." }) });

/**
 * `/livestreams/{id}/outputs/` (issue 26): declare, read and delete a
 * stream's simulcast targets. Another organization's stream is 404 as a
 * missing one. The process holding the broadcast is poked (`changed`) so an
 * output added or deleted here is acted on at once; elsewhere its runner
 * sees the row within its poll.
 */
export function outputRoutes(deps: { livestreams: LivestreamService; store: OutputStore; checkHost: (host: string) => Promise<void>; changed: () => void }) {
  const { store } = deps;
  const stream = async (orgId: string, id: string) => {
    const record = await deps.livestreams.get(orgId, id);
    if (!record) throw ApiError.notFound();
    return record;
  };
  return new Elysia({ name: "live-output-routes", prefix: API_PREFIX })
    .use(apiContext())
    .post(
      "/livestreams/:id/outputs/",
      async ({ auth, params, body, set }) => {
        const input = outputInput.parse(body);
        const record = await stream(auth.org.id, params.id);
        const [prepared] = await prepareOutputs([input], deps.checkHost);
        const [row] = await store.add(record.id, record.orgId, [prepared!]);
        deps.changed();
        set.status = 201;
        return success({ output: outputView(row!) }, "Output added; it sends while the stream is live.");
      },
      {
        permission: "livestreams.create",
        params: streamParams,
        detail: doc({
          operationId: "addLivestreamOutput",
          body: outputInput.schema,
          tags,
          summary: "Add a simulcast target",
          description:
            "The broadcast is copied (no re-encoding) to the target while the stream is LIVE; added while live, it starts at once. At most LIVE_OUTPUTS_PER_STREAM (default 5): the next is 422 `details.outputs`. A private or loopback target is 422 `details.url` unless ALLOW_PRIVATE_NETWORK=1. LIVESTREAM_OUTPUT_ACTIVE and LIVESTREAM_OUTPUT_FAILED tell its connection.",
          ok: 201,
          data: OutputAnswerSchema,
          dataDescription: "`output`, its `url` with the key as `***`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .get(
      "/livestreams/:id/outputs/",
      async ({ auth, params }) => {
        const record = await stream(auth.org.id, params.id);
        const settled = record.tags.has("settled");
        return success({ outputs: (await store.ofStreams([record.id])).map((r) => outputView(r, settled)) });
      },
      {
        permission: "livestreams.read",
        params: streamParams,
        detail: doc({
          operationId: "listLivestreamOutputs",
          tags,
          summary: "List a stream's simulcast targets",
          description: "Oldest first, with their status (as `outputs` on the stream).",
          data: OutputListSchema,
          dataDescription: "`outputs`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .get(
      "/livestreams/:id/outputs/:output_id/",
      async ({ auth, params }) => {
        const record = await stream(auth.org.id, params.id);
        const row = await store.get(record.id, params.output_id);
        if (!row) throw ApiError.notFound();
        return success({ output: outputView(row, record.tags.has("settled")) });
      },
      {
        permission: "livestreams.read",
        params: outputParams,
        detail: doc({
          operationId: "getLivestreamOutput",
          tags,
          summary: "Get a simulcast target",
          description: "Its status, bytes sent and last error.",
          data: OutputAnswerSchema,
          dataDescription: "`output`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .delete(
      "/livestreams/:id/outputs/:output_id/",
      async ({ auth, params }) => {
        const record = await stream(auth.org.id, params.id);
        if (!(await store.remove(record.id, params.output_id))) throw ApiError.notFound();
        deps.changed();
        return success({ id: params.output_id, deleted: true }, "Output deleted; its connection stops.");
      },
      {
        permission: "livestreams.delete",
        params: outputParams,
        detail: doc({
          operationId: "deleteLivestreamOutput",
          tags,
          summary: "Delete a simulcast target",
          description: "Its connection stops within 2 s (the process holding the broadcast polls every 0.5 s).",
          data: DeletedSchema,
          dataDescription: "`id`, `deleted: true`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    );
}
