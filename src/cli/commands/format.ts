/** Epoch milliseconds as ISO 8601, as the API prints times. */
export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
