/**
 * Issue 27 item 4: the names `static_renditions` takes (POST /videos/, the organization's default): the
 * top rung produced, the audio alone, or a rung of the organization's ladder. One check, used by the
 * registration (422 `details.static_renditions`) and by a settings change (the CLI and the screen).
 */

export const STATIC_HIGHEST = "highest";
export const STATIC_AUDIO_ONLY = "audio-only";
/** More names than there are distinct files (the ladder's 8 rungs and the two above) is a mistake. */
export const MAX_STATIC_RENDITIONS = 10;

/** Why a list is refused (null: it is fine). `ladder`: the rung names of the organization's ladder. */
export function staticRenditionsRefusal(names: string[], ladder: string[]): string | null {
  if (names.length > MAX_STATIC_RENDITIONS) return `at most ${MAX_STATIC_RENDITIONS} names`;
  const unknown = names.filter((n) => n !== STATIC_HIGHEST && n !== STATIC_AUDIO_ONLY && !ladder.includes(n));
  if (unknown.length === 0) return null;
  const known = [STATIC_HIGHEST, STATIC_AUDIO_ONLY, ...ladder].join(", ");
  return `${unknown.map((n) => JSON.stringify(n)).join(", ")} ${unknown.length === 1 ? "is" : "are"} not one of ${known}`;
}

/** Each name once, in the order first given. */
export const uniqueNames = (names: string[]): string[] => [...new Set(names)];
