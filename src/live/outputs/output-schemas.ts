import { t, type Static } from "elysia";
import type { StreamOutput } from "../../../machines/livestream-payload.ts";
import { type Equals, integer, isoTime, named, nullable, strictObject } from "../../http/openapi-docs.ts";
import { OUTPUT_STATUSES } from "./output-store.ts";

/** A simulcast target as shown (issue 26). */
export const OutputSchema = strictObject({
  id: t.String(),
  name: nullable(t.String()),
  url: t.String({ description: "The target, its key shown as `***` (never returned)." }),
  status: t.Union(
    OUTPUT_STATUSES.map((s) => t.Literal(s)),
    {
      description:
        "idle: the stream is not on air; connecting; active: the target takes the broadcast; reconnecting: the target was lost, retried with backoff (1 s up to 30 s) while the stream is live; failed: refused (a private address), not retried; stopped: the broadcast ended.",
    },
  ),
  bytes_sent: integer({ description: "Bytes sent to the target over this stream's broadcast (every connection)." }),
  started_at: nullable(isoTime("When the current (or last) connection became active.")),
  last_error: nullable(t.String({ description: "Why the last connection ended or was refused (the key scrubbed)." })),
});

export const OutputAnswerSchema = strictObject({ output: OutputSchema });
export const OutputListSchema = strictObject({ outputs: t.Array(OutputSchema) });
/** `data` of LIVESTREAM_OUTPUT_ACTIVE and LIVESTREAM_OUTPUT_FAILED. */
export const OutputEventDataSchema = strictObject({ stream_id: t.String(), output: OutputSchema });

const _output: Equals<Static<typeof OutputSchema>, StreamOutput> = true;
void _output;
named("LiveOutput", OutputSchema);
