// datetime-local carries no zone: the browser's offset is posted beside it (minutes, as getTimezoneOffset). */
// Served at /settings/assets/live-schedule.js (issue 25: an asset file, linted, under the screen's CSP script-src 'self').
(() => {
  const field = document.getElementById("tz-offset");
  if (field) field.value = String(new Date().getTimezoneOffset());
})();
