import type { OrgStore } from "./org-store.ts";

/** On first start with an empty database, create a usable "default" organization. */
export async function bootstrapDefaultOrg(orgs: OrgStore): Promise<{ orgId: string; apiKey: string } | null> {
  if (await orgs.hasAnyOrg()) return null;
  const { org, apiKey } = await orgs.createOrg("default");
  return { orgId: org.id, apiKey };
}
