import type { Database } from "../db/create-database.ts";
import { createSignIn } from "./accounts.ts";
import { createMemberships } from "./memberships.ts";
import type { PeopleContext } from "./people-rules.ts";
import { createSessions } from "./sessions.ts";
import { createSetupLinks } from "./setup-links.ts";

/**
 * People (issue 13, moved out of the settings screen by issue 25): users,
 * their memberships, the one-time setup links, and sessions, in one store
 * over the same rows for the settings screen and the CLI (`org create
 * --owner-email`, `org invite`). Each concept is its own file; this one only
 * puts them together.
 */
export function createPeopleStore(database: Database, opts: { now?: () => number } = {}) {
  const ctx: PeopleContext = { database, db: database.db, now: opts.now ?? Date.now };
  const members = createMemberships(ctx);
  return {
    ...members,
    ...createSetupLinks(ctx),
    ...createSignIn(ctx),
    ...createSessions(ctx, { organizationsOf: members.organizationsOf }),
  };
}

export type PeopleStore = ReturnType<typeof createPeopleStore>;

/** One people store per database: its in-memory "last touched" map of sessions is then shared by every user of it. */
const stores = new WeakMap<Database, PeopleStore>();
export function peopleFor(database: Database): PeopleStore {
  let s = stores.get(database);
  if (!s) {
    s = createPeopleStore(database);
    stores.set(database, s);
  }
  return s;
}
