import type { Organization } from "../orgs/org-store.ts";

/** A person's role in one organization (issue 13); what each may do on the screen is the screen's (src/settings/types.ts `can`). */
export const ROLES = ["owner", "admin", "developer", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** The signed-in person, for one organization (the session's). */
export interface Member {
  userId: string;
  email: string;
  role: Role;
  org: Organization;
  /** Every organization the person belongs to (the header's switcher appears with more than one). */
  organizations: Array<{ id: string; name: string; role: Role }>;
  /** Per-session synchronizer token; every form posts it back as `_csrf`. */
  csrfToken: string;
}

/** One row of an organization's member list. */
export interface MemberRow {
  userId: string;
  email: string;
  role: Role;
  createdAt: number;
  /** false until the person used their setup link. */
  active: boolean;
}

export interface SessionIssued {
  /** The cookie value (shown to the browser only). */
  token: string;
  csrfToken: string;
  expiresAt: number;
}

export type SetupPurpose = "owner_setup" | "invite";
