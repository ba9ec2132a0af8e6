import { oneOf, optional, string } from "../http/input.ts";
import { PLAYBACK_POLICIES } from "../orgs/org-settings.ts";

/** The creation fields of a video or live stream (POST /videos/, POST /livestreams/) that set its playback rules. */
export const playbackFields = {
  playback_policy: optional(
    oneOf(
      PLAYBACK_POLICIES,
      "`public`: anyone with a media URL plays it; `signed`: every media URL needs `?token=<JWT>` signed with one of the organization's signing keys. Default: the organization's (`public` unless changed).",
    ),
  ),
  playback_restriction_id: optional(
    string({ min: 1, max: 64, description: "A playback restriction of this organization (POST /playback-restrictions/): its referrer rules apply to every media request." }),
  ),
};
