import type { Role } from "../people/types.ts";

/*
 * The settings screen's contract (issue 13): who is signed in and what their
 * role lets them do. Sections (API keys, webhooks, videos, live streams,
 * organization, members) are Elysia plugins that read `member` from the
 * session guard (session-guard.ts) and render through page.ts. People,
 * roles and the signed-in member are their own domain (src/people, issue 25);
 * the screen names them as before.
 */
export { ROLES, type Member, type Role } from "../people/types.ts";

/**
 * What a role may do on the screen. API keys and members are owner only
 * (spec 2.2: owner-only actions are closed to API keys and to every role).
 */
export type ScreenAction = "keys.manage" | "members.manage" | "webhooks.manage" | "videos.manage" | "livestreams.manage" | "organization.manage" | "view";

const GRANTS: Record<Role, ReadonlySet<ScreenAction>> = {
  owner: new Set<ScreenAction>(["keys.manage", "members.manage", "webhooks.manage", "videos.manage", "livestreams.manage", "organization.manage", "view"]),
  admin: new Set<ScreenAction>(["webhooks.manage", "videos.manage", "livestreams.manage", "organization.manage", "view"]),
  developer: new Set<ScreenAction>(["webhooks.manage", "videos.manage", "livestreams.manage", "view"]),
  viewer: new Set<ScreenAction>(["view"]),
};

export function can(role: Role, action: ScreenAction): boolean {
  return GRANTS[role].has(action);
}
