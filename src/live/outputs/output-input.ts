import { t } from "elysia";
import { InvalidInput } from "../../errors.ts";
import { bodyInput, type Checked, field, optional, string } from "../../http/input.ts";
import { parseOutputTarget, type OutputTarget } from "./output-target.ts";

/** `POST /livestreams/{id}/outputs/` and each item of `outputs` on `POST /livestreams/`. */
export const outputInput = bodyInput(
  {
    url: string({
      min: 1,
      max: 2048,
      description:
        "The platform's ingest: `rtmp://host/app` or `rtmps://…` (the key after the application, or as `stream_key`), or `srt://host:port` (with `streamid`, or `stream_key`). Private and loopback addresses are refused unless ALLOW_PRIVATE_NETWORK=1.",
      examples: ["rtmps://live.example-platform.com:443/app"],
    }),
    stream_key: optional(string({ min: 1, max: 1024, description: "The platform's stream key: appended as RTMP's stream name, or SRT's `streamid`. Sealed at rest, never returned or logged." })),
    name: optional(string({ min: 1, max: 100, description: "A label for people (e.g. the platform's name)." })),
  },
  { description: "A simulcast target." },
);

export type OutputInput = ReturnType<typeof outputInput.parse>;
export const MAX_OUTPUTS_IN_BODY = 20;

/** `outputs` of a stream's creation: each item checked as by the outputs route; the count per stream is checked at insert. */
export const outputsField = optional(
  field(
    t.Array(outputInput.schema, {
      maxItems: MAX_OUTPUTS_IN_BODY,
      description: "Simulcast targets to add with the stream (as `POST /livestreams/{id}/outputs/`); at most LIVE_OUTPUTS_PER_STREAM (default 5).",
    }),
    (v): Checked<OutputInput[]> => {
      if (!Array.isArray(v) || v.length > MAX_OUTPUTS_IN_BODY) return { ok: false, error: `must be an array of at most ${MAX_OUTPUTS_IN_BODY} targets` };
      const out: OutputInput[] = [];
      for (const [i, item] of v.entries()) {
        try {
          out.push(outputInput.parse(item));
        } catch (err) {
          const details = (err as { details?: unknown }).details;
          const first = details && typeof details === "object" ? Object.entries(details as Record<string, string>)[0] : undefined;
          return { ok: false, error: first ? `[${i}].${first[0]} ${first[1]}` : `[${i}] must be a target object` };
        }
      }
      return { ok: true, value: out };
    },
  ),
);

/**
 * Targets ready to store: URL and key combined, the host through the
 * outbound guard. Throws 422 naming the field (`outputs` with `prefix`).
 */
export async function prepareOutputs(inputs: readonly OutputInput[], checkHost: (host: string) => Promise<void>, prefix?: string): Promise<Array<{ target: OutputTarget; name: string | null }>> {
  const out: Array<{ target: OutputTarget; name: string | null }> = [];
  for (const [i, input] of inputs.entries()) {
    const where = (f: string) => (prefix ? `${prefix}` : f);
    const at = (f: string) => (prefix ? `[${i}].${f} ` : "");
    const parsed = parseOutputTarget(input.url, input.stream_key);
    if (!parsed.ok) throw new InvalidInput({ [where(parsed.field)]: `${at(parsed.field)}${parsed.error}` });
    try {
      await checkHost(parsed.value.host);
    } catch (err) {
      throw new InvalidInput({ [where("url")]: `${at("url")}${err instanceof Error ? err.message : "refused"}: private and loopback targets need ALLOW_PRIVATE_NETWORK=1.` });
    }
    out.push({ target: parsed.value, name: input.name ?? null });
  }
  return out;
}
