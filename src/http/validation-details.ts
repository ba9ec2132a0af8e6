/** Turns Elysia/TypeBox validation errors into spec 7.2's `details`: field name → message. */
export function validationDetails(error: unknown): Record<string, string> {
  const e = error as { type?: string; all?: Array<{ path?: string; message?: string; summary?: string; schema?: { error?: string } }> };
  const where = e.type ?? "body";
  const details: Record<string, string> = {};
  let all: NonNullable<typeof e.all> = [];
  try {
    all = e.all ?? [];
  } catch {
    all = [];
  }
  for (const issue of all) {
    const field = (issue.path ?? "").replace(/^\//, "").replace(/\//g, ".") || where;
    if (details[field]) continue;
    details[field] = issue.schema?.error ?? issue.summary ?? issue.message ?? "is invalid";
  }
  if (Object.keys(details).length === 0) details[where] = "is invalid";
  return details;
}
