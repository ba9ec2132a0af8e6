import { readBoundedText } from "../http/bounded-body.ts";
import { BODY_LIMITS } from "../http/route-limits.ts";

export type ParsedForm = Record<string, string | string[]>;

/**
 * The settings screen's body parser (every POST under /settings, sign-in and
 * setup links included), in place of Elysia's, which reads a body whole: at
 * most `BODY_LIMITS.settingsForm` bytes, counted while read (413 past it,
 * chunked or not). Forms and the screen's scripts send
 * `application/x-www-form-urlencoded`; a repeated name becomes a list, as
 * Elysia's parser made it. Any other type is read (bounded) and ignored: an
 * empty form, which every route refuses as it would a blank one.
 */
export async function readFormBody(request: Request, contentType: string | undefined): Promise<ParsedForm> {
  const text = await readBoundedText(request, BODY_LIMITS.settingsForm);
  const form: ParsedForm = Object.create(null);
  if ((contentType ?? "").split(";")[0]!.trim().toLowerCase() !== "application/x-www-form-urlencoded") return form;
  for (const [key, value] of new URLSearchParams(text)) {
    const had = form[key];
    if (had === undefined) form[key] = value;
    else if (Array.isArray(had)) had.push(value);
    else form[key] = [had, value];
  }
  return form;
}
